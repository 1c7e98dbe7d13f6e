"""The admin's one route table (crontick.admin.routing): built without loading any page, API or store, and every
route's handler, named as text, exists."""

from __future__ import annotations

import subprocess
import sys

import crontick.admin
from crontick.admin import routing

COLD = (
    "import sys, crontick.admin; crontick.admin.routes();"
    " print(' '.join(sorted(m for m in sys.modules if m.startswith('crontick.admin'))))"
)


def test_building_the_routes_loads_only_the_declarations() -> None:
    # The tick and health functions build the same app on their cold start: they must not pay for the admin.
    out = subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True, check=True).stdout.split()
    resources = {resource.__name__ for resource in crontick.admin.RESOURCES}
    assert set(out) == {"crontick.admin", "crontick.admin.routing", *resources}


def test_every_route_names_a_handler_that_exists() -> None:
    targets = [getattr(route.endpoint, "target", None) for route in crontick.admin.routes()]  # type: ignore[attr-defined]
    named = [target for target in targets if target is not None]
    assert len(named) > 60  # every page (and its .json twin), form, API route and /api/metrics
    for target in named:
        assert callable(routing.handler_of(target)), target
