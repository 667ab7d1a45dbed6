# Quick start: `make demo` runs flowc on an example, `make test` runs the whole suite.
#
# What each target installs (each only if missing, each saying what before it does):
#   make demo   Python: flowc and its dependencies, into .venv (pip)
#               system: Graphviz (apt: graphviz)
#   make test   Python: the above plus the [dev] extra (pytest, ruff, mypy, ag2, playwright, ...)
#               system: the above plus every script in TEST_DEPS below
#   make setup  everything `make test` installs, without running anything
PYTHON ?= python3
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
TEST_DEPS += scripts/deps/node-editors.sh
TEST_DEPS += scripts/deps/neovim.sh
TEST_DEPS += scripts/deps/postgresql.sh

.PHONY: setup demo test lint typecheck pytest bench clean demo-deps test-deps

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
	$(BIN)/ruff check flowc tests benchmarks

typecheck: $(DEV_STAMP)
	$(BIN)/mypy --strict flowc

pytest: setup
	$(BIN)/pytest

test: setup lint typecheck pytest

bench: setup
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
