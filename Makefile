# Everything installs into .venv from the package registries; nothing relies on what the
# machine happens to have beyond a Python >= 3.11 and git.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TESTS  ?=

.PHONY: venv test test-slow lint demo bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "deepseek-review needs Python >= 3.11; set PYTHON=python3.11 or newer")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## The fast suite (every test but those marked slow).
test: $(STAMP)
	$(BIN)/python -m pytest -q -m 'not slow' $(if $(TESTS),-k '$(TESTS)')

## The slow fault and crash suites (marked slow); .ci/run runs them after make test.
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow $(if $(TESTS),-k '$(TESTS)')

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

demo: $(STAMP)
	$(BIN)/python scripts/demo.py

## Every row of docs/benchmarks.md, measured side by side (~10 min; needs git, curl, strace,
## sha256sum, xargs, ssh-keygen and /usr/bin/time besides the venv).
bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) dist build .mypy_cache .ruff_cache .pytest_cache demo-out .bench
