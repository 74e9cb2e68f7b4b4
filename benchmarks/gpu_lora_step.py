"""LoRA training step time of the reader on a GPU (docs/gpu.md, "Cost"): seconds per optimiser step
of finrag's own trainer (``core/reader/lora.py``: ``load_base``, ``wrap_lora``, ``train_lora``) on
the pipeline's prompts, with the paper's recipe (rank 16 on q/k/v/o, effective batch 64, micro-batch
4, bfloat16 on a CUDA GPU).

    python benchmarks/gpu_lora_step.py --model /path/to/hf-folder --lake data_lake --steps 3
    python benchmarks/gpu_lora_step.py --model runs/llama8b-dummy --dummy-weights --prompts prompts.jsonl

``--dummy-weights``: the folder's config with random weights (an 8B Llama shape written by
``benchmarks/gpu_reader.py --make-dummy-model``), enough for the time and memory of a step; the
targets are seeded random labels, since only the step's cost is measured. The first step includes
the CUDA warm-up and is reported apart.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--dummy-weights", action="store_true")
    ap.add_argument("--lake", default="data_lake")
    ap.add_argument("--prompts", default="", help="JSON-lines prompts (benchmarks/gpu_reader.py --save-prompts)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--effective-batch", type=int, default=64)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--max-length", type=int, default=2048)
    args = ap.parse_args()

    import torch
    from gpu_reader import pipeline_prompts

    from finrag_dagster.core.reader.lora import LoraHyper, encode_example, load_base, train_lora, wrap_lora

    n = args.effective_batch * args.steps
    prompts = pipeline_prompts(args.lake, n, args.prompts)
    t0 = time.perf_counter()
    model, tok = load_base(args.model, dummy_weights=args.dummy_weights)
    load = time.perf_counter() - t0
    h = LoraHyper(effective_batch=args.effective_batch, micro_batch=args.micro_batch, epochs=1, max_steps=args.steps, max_length=args.max_length)
    rng = random.Random(0)
    train = [
        encode_example(tok, f"a{i}", p, "Earnings & Guidance", {k: rng.choice((-1, 0, 1)) for k in ("1D", "3D", "5D")}, h.max_length)
        for i, p in enumerate(prompts)
    ]
    tokens = sum(len(e.input_ids) for e in train) / len(train)
    pm = wrap_lora(model, h, seed=0)
    trainable = sum(p.numel() for p in pm.parameters() if p.requires_grad)
    marks: list[float] = []
    torch.cuda.reset_peak_memory_stats() if torch.cuda.is_available() else None
    t1 = time.perf_counter()
    train_lora(pm, tok, train, [], h, seed=0, log=lambda m: marks.append(time.perf_counter() - t1) if " step " in m else None)
    per = [b - a for a, b in zip([0.0, *marks], marks)]
    dev = next(pm.parameters()).device
    peak = torch.cuda.max_memory_allocated() / 2**30 if dev.type == "cuda" else float("nan")
    print(f"model {args.model} ({'dummy' if args.dummy_weights else 'real'} weights) on {dev}, {next(pm.parameters()).dtype}, load {load:.0f}s")
    print(f"{len(train)} examples, {tokens:.0f} tokens each on average; {trainable / 1e6:.2f}M trainable parameters")
    print(f"steps (effective batch {h.effective_batch}, micro-batch {h.micro_batch}): " + ", ".join(f"{s:.1f}s" for s in per))
    if len(per) > 1:
        print(f"seconds per step after the first: {sum(per[1:]) / len(per[1:]):.2f}; peak GPU memory {peak:.1f} GiB")


if __name__ == "__main__":
    main()
