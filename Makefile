# The README's two commands. Each builds the virtual environment once (the stamp file records
# it; editing pyproject.toml rebuilds it), then runs the job.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
EXAMPLE ?= examples/locomo_moving_city.json

# Models ship inside PyPI packages; nothing may be fetched from a model hub at run time.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test venv clean

venv: $(STAMP)

# torch is pinned and installed first so that pip keeps the CPU build instead of pulling CUDA.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[models,test,bench]'
	touch $@

demo: $(STAMP)
	$(BIN)/zeromem demo $(EXAMPLE)

# Static checks first (configured in pyproject.toml: [tool.ruff], [tool.mypy]), then the tests.
test: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/mypy
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache
