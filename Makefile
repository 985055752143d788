# Two entry points, each creating its own virtual environment in .venv:
#   make demo   install crsbench and run the main job on the embedded synthetic data
#   make test   install crsbench with its dev extras and run lint + the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
OUT    ?= results/demo

.PHONY: demo test lint install bench

$(BIN)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[dev]"
	touch $@

install: $(BIN)/.installed

demo: $(BIN)/.installed
	$(BIN)/crsbench demo --out $(OUT)

lint: $(BIN)/.installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/lint-imports

test: lint
	$(BIN)/python -m pytest -q
