# Two entry points, each creating its own virtual environment in .venv:
#   make demo   install crsbench with only what the demo uses (no Ray, pytest, ruff, ...)
#               and run the main job on the embedded synthetic data
#   make test   install crsbench with its dev extras and run lint, mypy + the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
OUT    ?= results/demo

.PHONY: demo test lint install bench browser docs typecheck

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# One stamp per install profile; editing pyproject.toml reinstalls.
$(BIN)/.installed-demo: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[demo]"
	touch $@

$(BIN)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[dev]"
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps "rliable==1.2.0"
	touch $@

install: $(BIN)/.installed-dev

demo: $(BIN)/.installed-demo
	$(BIN)/crsbench demo --out $(OUT)

# The report's browser test needs Debian's chromium; install it when we can (root + apt-get),
# otherwise that one test skips with its reason.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "chromium not installed: the report's browser test will be skipped"; }

lint: $(BIN)/.installed-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports

test: lint typecheck browser
	$(BIN)/python -m pytest -q

# mypy on src/ against ci/mypy_baseline.json: a file's error count may only shrink
# (python ci/typecheck.py --update lowers the baseline after a fix). No cache is needed:
# a cold run (fresh clone) takes about a minute of CPU; later runs reuse .mypy_cache (seconds).
typecheck: $(BIN)/.installed-dev
	$(BIN)/python ci/typecheck.py

# The docs site (MkDocs + Material, dev extras), built offline in strict mode into site/.
docs: $(BIN)/.installed-dev
	$(BIN)/mkdocs build --strict --site-dir site
