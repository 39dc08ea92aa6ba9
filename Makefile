# Two commands do everything: `make demo` and `make test`. Both install into .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# optional source folders, linted when present
LINT_MORE := $(wildcard benchmarks examples)

.PHONY: install demo test lint bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/pyvolcano demo --out demo-out

test: $(STAMP)
	$(BIN)/ruff check src tests $(LINT_MORE)
	$(BIN)/pytest -q -n 2

lint: $(STAMP)
	$(BIN)/ruff check src tests $(LINT_MORE)

bench: $(STAMP)
	$(BIN)/pytest -o addopts= -q -s -m slow benchmarks tests

clean:
	rm -rf $(VENV) demo-out .pytest_cache .ruff_cache
