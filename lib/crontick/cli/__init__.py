"""The `crontick` command line: `main` parses and dispatches; one module per group of subcommands."""
