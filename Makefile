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

.PHONY: help install dev eval eval-sql test lint clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-10s %s\n", $$1, $$2}'

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

$(VENV)/.installed-peers: $(VENV)/.installed-dev
	$(BIN)/python -m pip install -q -e '.[dev,peers]'
	touch $@

install: $(VENV)/.installed ## create .venv and install the project (ndcg command)

dev: $(VENV)/.installed-dev ## install the project plus test and lint tools

eval: install ## evaluate the sample in data/: print a summary, write out/
	$(BIN)/ndcg evaluate --run $(RUN) --qrels $(QRELS) --k $(K) --out $(OUT)

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

test: dev $(VENV)/.installed-peers ## install what the tests need (peer tools too) and run the whole suite
	$(BIN)/python -m pytest -q

lint: dev ## ruff and mypy
	$(BIN)/ruff check pipeline tests data
	$(BIN)/ruff format --check pipeline tests data
	$(BIN)/mypy

clean: ## remove outputs and caches (keeps .venv)
	rm -rf $(OUT) .pytest_cache .mypy_cache .ruff_cache
