# Quick start: `make demo` runs flowc on an example, `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO := examples/feedback_loop.flow

.PHONY: setup demo test lint typecheck pytest bench clean

setup: $(STAMP) system-deps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Graphviz's `dot` (SVG/PNG rendering). Installed with apt where we may; flowc still
# works without it (dot and mermaid output are text) and says how to install it.
system-deps:
	@bash scripts/system-deps.sh

demo: setup
	@bash scripts/demo.sh $(DEMO)

lint: $(STAMP)
	$(BIN)/ruff check flowc tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy --strict flowc

pytest: setup
	$(BIN)/pytest

test: setup lint typecheck pytest

bench: setup
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
