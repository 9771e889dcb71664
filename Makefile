# Everything installs into .venv from the package registries; nothing relies on what the
# machine happens to have beyond a Python >= 3.11 and git.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CONTRACT_STAMP := $(VENV)/.installed-contract
SARIF_MT_DIR := $(VENV)/sarif-multitool
SARIF_MT := $(SARIF_MT_DIR)/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool
DOCS_STAMP := $(VENV)/.installed-docs
TESTS  ?=
# pytest-xdist workers for make test and make test-slow: twice the cores, as the suites spend
# about a third of their time waiting on servers, child processes and timeouts (on 2 cores 4
# workers beat 2). A module whose module-scoped fixture is costly keeps its tests on one
# worker (xdist_group, --dist loadgroup).
JOBS   ?= $(shell $(PYTHON) -c 'import os; print(2 * (os.cpu_count() or 1))')
# The suites start Python hundreds of times and pytest rewrites every test module's asserts:
# both reuse their compiled bytecode only where it may be written (an environment that sets
# PYTHONDONTWRITEBYTECODE pays ~0.1 s more per process and seconds per worker).
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q
XDIST  := -n $(JOBS) --dist loadgroup

.PHONY: venv test test-slow test-contract lint demo docs bench clean sarif-multitool dist

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "deepseek-review needs Python >= 3.11; set PYTHON=python3.11 or newer")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

## The fast suite (every test but those marked slow or contract), over JOBS worker processes.
test: $(STAMP)
	$(PYTEST) $(XDIST) -m 'not slow and not contract' $(if $(TESTS),-k '$(TESTS)')

## The slow fault and crash suites (marked slow); .ci/run runs them after make test.
test-slow: $(STAMP)
	$(PYTEST) $(XDIST) -m 'slow and not contract' $(if $(TESTS),-k '$(TESTS)')

## Microsoft's SARIF Multitool (npm; a .NET binary for Linux): tests/finding/test_sarif_multitool.py runs
## its SARIF and GitHub rules over the SARIF the tool writes when it is here; .ci/run installs it.
$(SARIF_MT):
	npm install --silent --no-audit --no-fund --prefix $(SARIF_MT_DIR) @microsoft/sarif-multitool@5.7.0

sarif-multitool: $(SARIF_MT)

## The contract extra: llama-cpp-python compiles llama.cpp (CPU only; minutes on 2 cores the
## first time, seconds once pip's wheel cache holds the wheel). Its own stamp, so make test
## never pays for it.
$(CONTRACT_STAMP): $(STAMP)
	CMAKE_BUILD_PARALLEL_LEVEL=$${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
		$(BIN)/python -m pip install --quiet -e '.[dev,contract]'
	touch $(CONTRACT_STAMP)

## The contract suite (marked contract): the real CLI against a real llama-cpp-python server
## on 127.0.0.1, serving a tiny model the suite writes itself (docs/contributing/developing.md).
test-contract: $(CONTRACT_STAMP)
	$(PYTEST) -m contract tests/contract $(if $(TESTS),-k '$(TESTS)')

## Style, types, and the layers (pyproject.toml's [tool.importlinter]: imports point down only,
## no cycle between subpackages or modules, every import counted).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python scripts/check_sizes.py

demo: $(STAMP)
	$(BIN)/python scripts/demo.py

## The release files: the sdist and the wheel in dist/, checked by twine (--strict: a README
## PyPI would not render fails), so a release is one tag and one upload away.
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*

## The documentation site (mkdocs-material, the docs extra; its own stamp, so make test never
## pays for it) built into site/. --strict: a broken link, a missing anchor or a page left out
## of mkdocs.yml's nav fails. Offline: no plugin fetches anything at build time.
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

## The performance guards of issue #31 (one `run`, --version, batch, verify pinned and
## unpinned, peak memory, a 20,000-file dry run), #32's planning of 100,000 files and the signing
## count, each against its limit, written to docs/contributing/benchmarks.md (~5-10 min; needs
## git, strace, sha256sum, xargs, ssh-keygen and /usr/bin/time besides the venv). One row alone:
## `.venv/bin/python -m benchmarks split` (the document is written by a whole run only).
bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) dist build .mypy_cache .ruff_cache .pytest_cache demo-out .bench site
