# Two commands do everything: `make demo` and `make test`. Both install into .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# optional source folders, linted when present
LINT_MORE := $(wildcard benchmarks examples)

.PHONY: install browser demo test lint bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/pyvolcano demo --out demo-out

# Debian's chromium for the browser tests of the report pages; best effort (as root with apt-get): they skip without it
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1; } || \
	  echo "note: chromium could not be installed; the browser tests will skip"

test: $(STAMP) browser
	$(BIN)/ruff check src tests $(LINT_MORE)
	$(BIN)/mypy
	$(BIN)/pytest -q -n 2

lint: $(STAMP)
	$(BIN)/ruff check src tests $(LINT_MORE)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/pytest -o addopts= -q -s -m slow benchmarks tests

clean:
	rm -rf $(VENV) demo-out .pytest_cache .ruff_cache
