"""`python -m crontick.cli`: the same command as the installed `crontick` script."""

import sys

from crontick.cli.main import main

sys.exit(main())
