# Quick start: `make demo` runs flowc on an example, `make test` runs the whole suite.
#
# What each target installs (each only if missing, each saying what before it does):
#   make demo   Python: flowc and its dependencies, into .venv (pip)
#               system: Graphviz (apt: graphviz)
#   make test   Python: the above plus the [dev] extra (pytest, ruff, mypy, ag2, playwright, selenium, ...),
#               and one environment per test job (scripts/ci/matrix.sh): .venv-3.12,
#               .venv-3.13-newest, .venv-3.11-lowest, with the interpreters they need
#               (scripts/deps/python.sh: PATH, pyenv, else uv)
#               system: the above plus every script in TEST_DEPS below
#   make setup  what `make test` installs in .venv and on the system, without running anything
#
# `make test` runs ruff and mypy once, then the demo and the whole pytest suite in each job:
# every Python in PYTHONS, the newest one with the newest dependencies the bounds allow,
# and the oldest one again with the lowest. Quicker, one Python and no dependency jobs:
# `make test PYTHONS=3.11 DEPS_JOBS=`; the suite alone, in .venv: `make pytest`.
PYTHON ?= python3
PYTHONS ?= 3.11 3.12 3.13
DEPS_JOBS ?= newest lowest
export PYTHONS DEPS_JOBS
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
DEMO := examples/feedback_loop.flow

# System packages, one script per tool (scripts/deps/*.sh); each script installs only
# what is missing and names the packages before installing them.
# Needed by the demo (and so by the tests too):
DEMO_DEPS := scripts/deps/graphviz.sh
# Needed by the tests only: add one line per tool.
TEST_DEPS := scripts/deps/browser.sh
TEST_DEPS += scripts/deps/browsers-more.sh
TEST_DEPS += scripts/deps/node-editors.sh
TEST_DEPS += scripts/deps/neovim.sh
TEST_DEPS += scripts/deps/postgresql.sh

.PHONY: setup demo test lint typecheck pytest test-jobs bench clean demo-deps test-deps

setup: $(DEV_STAMP) demo-deps test-deps

$(STAMP): pyproject.toml
	@echo "installing flowc and its Python dependencies into $(VENV) (pip)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	@echo "installing the [dev] extra into $(VENV) (pip): test, lint and type-check tools, ag2, playwright"
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP)

demo-deps:
	@for s in $(DEMO_DEPS); do bash $$s || exit 1; done

test-deps:
	@for s in $(TEST_DEPS); do bash $$s || exit 1; done

demo: $(STAMP) demo-deps
	@bash scripts/demo.sh $(DEMO)

lint: $(DEV_STAMP)
	$(BIN)/ruff check flowc tests benchmarks scripts
	$(BIN)/ruff format --check flowc tests benchmarks scripts

typecheck: $(DEV_STAMP)
	$(BIN)/mypy --strict flowc

pytest: setup
	$(BIN)/pytest

test-jobs: setup
	bash scripts/ci/matrix.sh $(PYTHON)

test: setup lint typecheck test-jobs

bench: setup
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(VENV)-3.* .pytest_cache .mypy_cache .ruff_cache
