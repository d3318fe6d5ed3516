# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EMULATORS := tools/emulators

.PHONY: demo test lint typecheck unit bench serve emulators system-tools clean requirements

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# The storage emulators (Azurite, cosmosdb-server) come from npm at pinned versions.
$(EMULATORS)/node_modules/.installed: $(EMULATORS)/package.json $(EMULATORS)/package-lock.json
	cd $(EMULATORS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

emulators: $(EMULATORS)/node_modules/.installed

demo: $(STAMP)
	$(BIN)/orc demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo

typecheck: $(STAMP)
	$(BIN)/mypy

# System tools the tests use: pdftoppm renders exported PDFs (Debian's poppler-utils).
system-tools:
	@command -v pdftoppm >/dev/null || (apt-get update -qq && apt-get install -y -qq poppler-utils >/dev/null)

unit: $(STAMP) emulators system-tools
	$(BIN)/python -m pytest -q

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m bench

# requirements.txt for the Functions remote build: pyproject.toml's dependencies pinned with pip-compile
# (tests/test_packaging.py fails when they change and this was not run again).
requirements: $(STAMP)
	CUSTOM_COMPILE_COMMAND="make requirements" $(BIN)/pip-compile --quiet --strip-extras --no-emit-index-url \
		--no-emit-find-links --no-emit-trusted-host --output-file requirements.txt pyproject.toml

serve: $(STAMP)
	$(BIN)/orc serve

clean:
	rm -rf $(VENV) .orc .mypy_cache .ruff_cache .pytest_cache $(EMULATORS)/node_modules
