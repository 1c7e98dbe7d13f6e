# crontick: two commands on a fresh machine with Python 3.11+: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-wheel bench chaos lint docs reference schema clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "crontick needs Python 3.11 or newer; found " + sys.version.split()[0] + " (set PYTHON=python3.12, for example)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

## Embedded PostgreSQL unless DATABASE_URL is set; migrate, seed demo data, serve on 127.0.0.1:8000.
run: $(STAMP)
	$(BIN)/crontick dev

## The whole suite against CRONTICK_TEST_DATABASE_URL, or an embedded PostgreSQL when it is unset: on
## PYTEST_WORKERS processes (pytest-xdist; the tests mostly wait on processes, HTTP and PostgreSQL), then the
## `serial` ones (tests/chaos, tests/perf: kill -9 and measures that want the CPU to themselves) on their own.
PYTEST_WORKERS ?= 3
SUITE := -m pytest -q -n $(PYTEST_WORKERS) -m "not serial"
SERIAL := -m pytest -q -m serial
test: $(STAMP)
	$(BIN)/python $(SUITE)
	$(BIN)/python $(SERIAL)

## ruff (lint rules and format, configured in pyproject.toml) over the whole tree, mypy --strict over lib/, then
## import-linter: the layers contract in pyproject.toml (imports flow one way; no cycle comes back).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

## sql/schema.sql, the live schema, from a fresh migrate on CRONTICK_TEST_DATABASE_URL's server (else an embedded
## one); tests/db/test_schema_file.py fails while it is stale. Run it after adding a migration.
schema: $(STAMP)
	$(BIN)/python -m crontick.db.schema_file --write $${CRONTICK_TEST_DATABASE_URL:+--url "$$CRONTICK_TEST_DATABASE_URL"}

## The docs site (mkdocs-material, --strict) into .crontick/site; reference pages are generated from the code.
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,docs]'
	@touch $@

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict --site-dir .crontick/site

## The tables in docs/*.md generated from the code (settings, CLI, the committed bench run), written into the
## files so GitHub shows them; tests/docs fails when one is stale.
reference: $(STAMP)
	$(BIN)/python docs/gen_reference.py --write

## What users install: build the wheel and sdist into dist/, install the wheel (with its dev extra) into a fresh
## venv and run the suite against it from here, where lib/ is not on sys.path (tests/packaging checks that).
WHEEL_VENV := .crontick/wheel-venv
test-wheel: $(STAMP)
	rm -rf dist $(WHEEL_VENV)
	$(BIN)/python -m build --outdir dist >/dev/null
	@ls -l dist
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(WHEEL_VENV)/bin/python -m pip install --quiet "$$(ls dist/crontick-*.whl)[dev]"
	CRONTICK_TEST_WHEEL="$$(ls dist/crontick-*.whl)" CRONTICK_TEST_INSTALLED=wheel $(WHEEL_VENV)/bin/python $(SUITE)
	CRONTICK_TEST_WHEEL="$$(ls dist/crontick-*.whl)" CRONTICK_TEST_INSTALLED=wheel $(WHEEL_VENV)/bin/python $(SERIAL)

## Benchmark against procrastinate, pgqueuer and plain psycopg loops (CRONTICK_BENCH_DATABASE_URL or embedded).
## Its peers live in their own venv, so they never slow the runtime venv's imports (cold start is measured there).
BENCH_VENV := .crontick/bench-venv
$(BENCH_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install --quiet -e '.[bench]'
	@touch $@

bench: $(STAMP) $(BENCH_VENV)/.installed
	$(BENCH_VENV)/bin/python -m bench
	$(BIN)/python docs/gen_reference.py --write

## Fault scenarios against real processes (uvicorn, PostgreSQL, a local provider); one row each, then
## `chaos: N scenarios, 0 lost, 0 duplicated, 0 forged accepted`. CRONTICK_CHAOS_DATABASE_URL or embedded.
chaos: $(STAMP)
	$(BIN)/python -m bench.chaos

clean:
	rm -rf $(VENV) .crontick dist build
