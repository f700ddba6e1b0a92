# ndcg-pipeline: every workflow starts here. `make` lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN ?= data/run.parquet
QRELS ?= data/qrels.parquet
K ?= 5,10,20
OUT ?= out

SIZE ?= 1M
# pytest workers for make test (pytest-xdist); the tests that share a SparkSession all run on one of them
WORKERS ?= 2
REPEAT ?= 3
# make bench: empty = run.py's defaults (layouts shuffled then clustered, every tool, this checkout's ndcg)
LAYOUT ?=
TOOLS ?=
NDCG ?=
TREC_EVAL ?=
# a before/after: ALSO_NDCG=before=path/to/other/ndcg times that CLI too; LABEL names the result files
# TREC_EVAL=path/to/trec_eval (or its source folder, built here) times trec_eval on the TREC text too
ALSO_NDCG ?=
LABEL ?=

.PHONY: help install dev eval eval-partition eval-sql test test-tools test-fast browser lint generate bench clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-10s %s\n", $$1, $$2}'

# pip installs without compiling every module to bytecode (--no-compile): pyspark, mypy and the
# rest are tens of thousands of files, most never imported; a module is compiled when first
# imported instead. 24 of the 84 s of a fresh clone's installs.
PIP_INSTALL := -m pip install -q --no-compile
# the goal a user typed, named in messages (test-tools runs in a make of its own)
GOAL ?= $(MAKECMDGOALS)

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || \
	  { echo "ndcg-pipeline needs Python 3.11 or newer; '$(PYTHON)' is $$($(PYTHON) --version 2>&1). Try: make PYTHON=python3.11 $(GOAL)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python $(PIP_INSTALL) --upgrade pip
	$(BIN)/python $(PIP_INSTALL) -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/python $(PIP_INSTALL) -e '.[dev]'
	touch $@

$(VENV)/.installed-peers: $(VENV)/.installed-dev
	$(BIN)/python $(PIP_INSTALL) -e '.[dev,peers]'
	touch $@

install: $(VENV)/.installed ## create .venv and install the project (ndcg command)

dev: $(VENV)/.installed-dev ## install the project plus test and lint tools

eval: install ## evaluate the sample in data/ (settings in eval.toml): print a summary, write out/
	$(BIN)/ndcg evaluate --config eval.toml --out $(OUT)

DT ?= 2026-11-21
eval-partition: install ## the nightly job on one day of the partitioned sample: make eval-partition DT=2026-11-21
	$(BIN)/ndcg evaluate --config eval.toml --run data/runs --partition dt=$(DT) --out $(OUT)/daily

eval-sql: dev ## the same evaluation as plain SQL in the duckdb CLI, written to out/sql/
	mkdir -p $(OUT)/sql
	$(BIN)/duckdb \
	  -cmd "SET VARIABLE run_path = '$(RUN)'" \
	  -cmd "SET VARIABLE qrels_path = '$(QRELS)'" \
	  -cmd "SET VARIABLE ks = [$(K)]" \
	  -cmd "SET VARIABLE out_path = '$(OUT)/sql'" \
	  -cmd ".read sql/ndcg.sql" \
	  -c ".read sql/export.sql"
	@echo "wrote $(OUT)/sql/per_query.parquet and $(OUT)/sql/summary.parquet"
	@# a hive-partitioned dataset, one partition at a time, each written to its own folder
	for partition in data/runs/*=*; do \
	  mkdir -p "$(OUT)/sql/$${partition##*/}" && \
	  $(BIN)/duckdb \
	    -cmd "SET VARIABLE run_path = '$$partition/*.parquet'" \
	    -cmd "SET VARIABLE qrels_path = '$(QRELS)'" \
	    -cmd "SET VARIABLE ks = [$(K)]" \
	    -cmd "SET VARIABLE out_path = '$(OUT)/sql/$${partition##*/}'" \
	    -cmd ".read sql/ndcg.sql" \
	    -c ".read sql/export.sql" > /dev/null || exit 1; \
	  echo "wrote $(OUT)/sql/$${partition##*/}/"; \
	done

# dbt for the dbt example's test, in a virtual environment of its own: dbt's pins (pathspec < 1)
# clash with the lint tools of .venv
DBT_VENV := .venv-dbt
$(DBT_VENV)/.installed: examples/dbt-duckdb/requirements.txt
	$(PYTHON) -m venv $(DBT_VENV)
	$(DBT_VENV)/bin/python $(PIP_INSTALL) -r examples/dbt-duckdb/requirements.txt
	touch $@

# pytest keeps the test modules it rewrites (for its assertion messages) as .pyc in __pycache__
# (git ignores it) unless PYTHONDONTWRITEBYTECODE is set, as it is on some machines and images:
# then every worker rewrote every module again, 4 of the 9 s each took to start
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest

test: ## install what the tests need (peer tools, a browser) and run the whole suite
	@$(MAKE) --no-print-directory -j2 test-tools GOAL=test
	$(PYTEST) -q -n $(WORKERS) --dist loadgroup

# the project's venv, the dbt venv and the browser do not need each other: installed side by side
test-tools: dev browser $(VENV)/.installed-peers $(DBT_VENV)/.installed

# The inner loop: no JVM, no subprocess, no command line, no browser, none of the tests marked slow, and of the
# tests parametrized over more than 4 cases every 12th (pyproject's markers say which); the peer tools are
# installed as for make test. CI and make test run everything.
FAST ?= not spark and not subprocess and not cli and not slow and not browser and not exhaustive
test-fast: dev $(VENV)/.installed-peers ## every test function without Spark, subprocesses, the command line, the browser, slow tests; a sample of each matrix
	$(PYTEST) -q -n $(WORKERS) -m "$(FAST)"

$(VENV)/.installed-bench: $(VENV)/.installed
	$(BIN)/python $(PIP_INSTALL) -e '.[bench]'
	touch $@

bench: $(VENV)/.installed-bench ## time us against the peers: make bench SIZE=10M LAYOUT=shuffled TOOLS=a,b NDCG=path FAMILIES=1 (results in bench/results/)
	$(BIN)/python bench/run.py --size $(SIZE) --repeat $(REPEAT) $(if $(MEMORY_LIMIT),--memory-limit $(MEMORY_LIMIT)) \
	  $(if $(LAYOUT),--layout $(LAYOUT)) $(if $(TOOLS),--tools $(TOOLS)) $(if $(NDCG),--ndcg $(NDCG)) \
	  $(if $(ALSO_NDCG),--also-ndcg $(ALSO_NDCG)) $(if $(LABEL),--label $(LABEL)) $(if $(TREC_EVAL),--trec-eval $(TREC_EVAL)) \
	  $(if $(FAMILIES),--families)

# The report's browser test needs headless Chromium. Installed with apt-get when it is
# missing and we can (root on Debian); elsewhere that one test skips and says why.
browser: ## install headless Chromium for the report's browser test, where possible
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || echo "could not install chromium: the report's browser test will be skipped"; \
	else echo "chromium not installed (needs root and apt-get): the report's browser test will be skipped"; fi

generate: install ## remake every generated file (sql/generated/, docs/reference.md's tables) from its source
	$(BIN)/python -m pipeline.generate

lint: dev ## ruff, mypy and sqlfluff (sql/)
	$(BIN)/ruff check pipeline tests data bench
	$(BIN)/ruff format --check pipeline tests data bench
	$(BIN)/mypy
	$(BIN)/sqlfluff lint sql

clean: ## remove outputs and caches (keeps .venv)
	rm -rf $(OUT) bench/out .pytest_cache .mypy_cache .ruff_cache
