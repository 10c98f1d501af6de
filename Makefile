# The README's commands. Each builds what it needs into the virtual environment once (a stamp
# file records it; editing pyproject.toml or bench/pyproject.toml rebuilds it), then runs the job:
#   make demo   the core install (library, CLI, SQLite store, default models; no torch)
#   make test   the core install plus every extra ([test,all]) and the lab: the suite covers them all
#   make bench  the core install plus the lab (bench/: the zeromem-bench distribution, which adds
#               `zeromem bench …` and `zeromem-bench …`), then lists its commands;
#               `make bench ARGS="locomo --data DIR"` runs one
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.installed-core
FULL := $(VENV)/.installed-all
LAB := $(VENV)/.installed-lab
EXAMPLE ?= examples/locomo_moving_city.json
# pytest-xdist workers: the suite's wall time on a 2-core machine halves with 2 (README, "Tests").
WORKERS ?= 2

# Models ship inside PyPI packages; nothing may be fetched from a model hub at run time.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test bench venv clean

venv: $(FULL)

$(CORE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# torch is pinned and installed first so that pip keeps the CPU build instead of pulling CUDA.
# The lab comes too: the suite runs its tests (test_bench_*, test_fuzz*, test_no_answer_fit).
$(FULL): $(CORE) bench/pyproject.toml
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[test,all]' -e ./bench
	touch $@ $(LAB)

# The lab on the core install: its own dependencies (bench/pyproject.toml) and zeromem's
# server, mcp and ann extras.
$(LAB): $(CORE) bench/pyproject.toml
	$(BIN)/python -m pip install --quiet -e . -e ./bench
	touch $@

demo: $(CORE)
	$(BIN)/zeromem demo $(EXAMPLE)

ARGS ?= --help
bench: $(LAB)
	$(BIN)/zeromem bench $(ARGS)

# Static checks first (configured in pyproject.toml: [tool.ruff], [tool.mypy]), then the tests.
test: $(FULL)
	$(BIN)/ruff check src bench tests
	$(BIN)/mypy
	$(BIN)/python tests/pg_server.py --sweep  # PostgreSQL servers of killed runs
	$(BIN)/python -m pytest -n $(WORKERS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache
