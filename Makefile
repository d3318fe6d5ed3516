# Two commands set everything up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUNTIME := $(VENV)/.runtime
EMULATORS := tools/emulators
WEB_TOOLS := tools/web
WEB_VENDOR := orc/web/vendor

.PHONY: demo test lint typecheck unit bench serve emulators system-tools chromium web-vendor clean requirements contracts

# uv installs the packages: it downloads and unpacks them in parallel, a fraction of pip's time on a fresh machine
# (bench/README.md, "make_demo"). The venv is made without pip (installing pip into it is most of a cold venv's
# time); the interpreter's own pip puts uv in it, at a pinned version from PyPI, or, where the interpreter has no
# pip, the venv gets pip from ensurepip and installs uv itself. The dev tools bring pip back (pip-compile needs it).
UV_VERSION := 0.13.9
UV := $(BIN)/uv
INSTALL := $(UV) pip install --quiet --python $(BIN)/python

$(BIN)/python:
	$(PYTHON) -m venv --without-pip $(VENV)

$(UV): | $(BIN)/python
	$(PYTHON) -m pip --python $(BIN)/python install --quiet --disable-pip-version-check uv==$(UV_VERSION) 2>/dev/null \
		|| { $(BIN)/python -m ensurepip --default-pip && $(BIN)/python -m pip install --quiet uv==$(UV_VERSION); }

# The dev install compiles its packages' bytecode: a Python that writes none (PYTHONDONTWRITEBYTECODE, set on the
# machines this project is built on) compiles every module it imports from source in every process, about half of
# the CPU an `orc serve` or `python -m mcp_server` spends starting, and the test suite starts dozens of them.
$(STAMP): pyproject.toml | $(UV)
	$(INSTALL) --compile-bytecode -e ".[dev]"
	touch $(STAMP) $(RUNTIME)

# The demo needs orc alone, not the dev tools (pytest, playwright, mypy, pip-tools…): a runtime install is a
# fraction of the time. A dev install (above) includes it.
$(RUNTIME): pyproject.toml | $(UV)
	test $(STAMP) -nt pyproject.toml 2>/dev/null || $(INSTALL) -e .
	touch $(RUNTIME)

# The storage emulators (Azurite, cosmosdb-server) come from npm at pinned versions.
$(EMULATORS)/node_modules/.installed: $(EMULATORS)/package.json $(EMULATORS)/package-lock.json
	cd $(EMULATORS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

emulators: $(EMULATORS)/node_modules/.installed

# The browser tests drive Debian's chromium (Playwright's own browser download cannot run here). CI runs as root.
chromium:
	command -v chromium >/dev/null || (apt-get update && apt-get install -y chromium)

# The page's vendored modules come from npm at pinned versions (tools/web/package-lock.json). The copies are
# committed, so running the page never needs npm; this target refreshes them after a version bump.
web-vendor:
	# Not `npm ci`: pdfjs-dist's optional Node canvas lists per-platform packages the lock cannot hold, which
	# npm ci reports as out of sync. The versions are exact in package.json and the lock pins the rest.
	cd $(WEB_TOOLS) && npm install --no-save --omit=optional --no-audit --no-fund --loglevel=error
	rm -rf $(WEB_VENDOR) && mkdir -p $(WEB_VENDOR)/marked $(WEB_VENDOR)/dompurify $(WEB_VENDOR)/pdfjs $(WEB_VENDOR)/swagger-ui
	cp $(WEB_TOOLS)/node_modules/marked/lib/marked.esm.js $(WEB_TOOLS)/node_modules/marked/LICENSE* $(WEB_VENDOR)/marked/
	cp $(WEB_TOOLS)/node_modules/dompurify/dist/purify.es.mjs $(WEB_TOOLS)/node_modules/dompurify/LICENSE $(WEB_VENDOR)/dompurify/
	cp $(WEB_TOOLS)/node_modules/pdfjs-dist/build/pdf.min.mjs $(WEB_TOOLS)/node_modules/pdfjs-dist/build/pdf.worker.min.mjs \
		$(WEB_TOOLS)/node_modules/pdfjs-dist/LICENSE $(WEB_VENDOR)/pdfjs/
	cp -r $(WEB_TOOLS)/node_modules/pdfjs-dist/standard_fonts $(WEB_VENDOR)/pdfjs/
	cp $(WEB_TOOLS)/node_modules/swagger-ui-dist/swagger-ui-bundle.js $(WEB_TOOLS)/node_modules/swagger-ui-dist/swagger-ui.css \
		$(WEB_TOOLS)/node_modules/swagger-ui-dist/favicon-32x32.png $(WEB_TOOLS)/node_modules/swagger-ui-dist/LICENSE \
		$(WEB_TOOLS)/node_modules/swagger-ui-dist/NOTICE $(WEB_VENDOR)/swagger-ui/
	# The bundle ends with a source-map comment naming a file that is not shipped; the browser would 404 on it.
	sed -i '/^\/\/# sourceMappingURL=/d' $(WEB_VENDOR)/swagger-ui/swagger-ui-bundle.js $(WEB_VENDOR)/marked/marked.esm.js \
		$(WEB_VENDOR)/dompurify/purify.es.mjs $(WEB_VENDOR)/pdfjs/*.mjs

# The demo keeps its data in ./.orc (make clean removes it), not in the user's own library.
demo: $(RUNTIME)
	ORC_HOME=.orc $(BIN)/orc demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo

typecheck: $(STAMP)
	$(BIN)/mypy

# System tools the tests use: pdftoppm renders exported PDFs (Debian's poppler-utils); curl is one of the clients
# the real-traffic suite (tests/traffic) drives `orc serve` with.
system-tools:
	@command -v pdftoppm >/dev/null || (apt-get update -qq && apt-get install -y -qq poppler-utils >/dev/null)
	@command -v curl >/dev/null || (apt-get update -qq && apt-get install -y -qq curl >/dev/null)

# One worker per core (at most 4: each starts its own emulators and browser when its tests need them): most of the
# suite's time is CPU in the test process itself.
unit: $(STAMP) emulators system-tools chromium
	$(BIN)/python -m compileall -q orc mcp_server tests
	$(BIN)/python -m pytest -q --numprocesses=auto --maxprocesses=4 --dist=worksteal

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m bench

# requirements.txt for the Functions remote build: pyproject.toml's dependencies pinned with pip-compile
# (tests/test_packaging.py fails when they change and this was not run again).
requirements: $(STAMP)
	CUSTOM_COMPILE_COMMAND="make requirements" $(BIN)/pip-compile --quiet --strip-extras --no-emit-index-url \
		--no-emit-find-links --no-emit-trusted-host --output-file requirements.txt pyproject.toml

# docs/contracts: the handoff's JSON Schemas, generated from the models (a test fails when they differ).
contracts: $(STAMP)
	$(BIN)/python -m orc.http.contract_schemas

serve: $(STAMP)
	$(BIN)/orc serve

clean:
	rm -rf $(VENV) .orc .mypy_cache .ruff_cache .pytest_cache $(EMULATORS)/node_modules $(WEB_TOOLS)/node_modules
