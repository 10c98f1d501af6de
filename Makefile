# The README's two commands. Each builds what it needs into the virtual environment once (a
# stamp file records it; editing pyproject.toml rebuilds it), then runs the job:
#   make demo  the core install (library, CLI, SQLite store, default models; no torch)
#   make test  the core install plus every extra ([test,all]): the suite covers them all
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.installed-core
FULL := $(VENV)/.installed-all
EXAMPLE ?= examples/locomo_moving_city.json
# pytest-xdist workers: the suite's wall time on a 2-core machine halves with 2 (README, "Tests").
WORKERS ?= 2

# Models ship inside PyPI packages; nothing may be fetched from a model hub at run time.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test venv clean

venv: $(FULL)

$(CORE): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e .
	touch $@

# torch is pinned and installed first so that pip keeps the CPU build instead of pulling CUDA.
$(FULL): $(CORE)
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[test,all]'
	touch $@

demo: $(CORE)
	$(BIN)/zeromem demo $(EXAMPLE)

# Static checks first (configured in pyproject.toml: [tool.ruff], [tool.mypy]), then the tests.
test: $(FULL)
	$(BIN)/ruff check src tests
	$(BIN)/mypy
	$(BIN)/python tests/pg_server.py --sweep  # PostgreSQL servers of killed runs
	$(BIN)/python -m pytest -n $(WORKERS)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache
