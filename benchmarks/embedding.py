"""Evidence embedding, the pipeline's dominant stage (docs/scale.md): one worker vs several.

    .venv/bin/python benchmarks/embedding.py --lake data_lake --n 4000

Takes the texts of the first ``--n`` evidence passages of a lake (run ``make demo`` first for
``data_lake``) and embeds them with all-MiniLM-L6-v2 twice in this process: with one worker (the
serial baseline: one batch at a time on one intra-op thread) and with ``--workers`` batches at
once (default: the CPUs this process may use). Prints both times, the ratio, and whether the
vectors are the same bytes (they must be).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import polars as pl  # noqa: E402

from finrag_dagster.core.embeddings import embed, embed_workers, load_model  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lake", default=str(ROOT / "data_lake"))
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    files = sorted(Path(args.lake, "evidence").rglob("*.parquet"))
    if not files:
        sys.exit(f"no evidence under {args.lake}: run `make demo` (or point --lake at a lake) first")
    texts: list[str] = []
    for f in files:
        texts += pl.read_parquet(f, columns=["text"])["text"].to_list()
        if len(texts) >= args.n:
            break
    texts = texts[: args.n]
    workers = args.workers or embed_workers()
    load_model(128)
    embed(texts[:64], workers=1)  # warm
    t0 = time.perf_counter()
    one = embed(texts, workers=1)
    t1 = time.perf_counter()
    many = embed(texts, workers=workers)
    t2 = time.perf_counter()
    print(f"{len(texts)} passages from {args.lake}")
    print(f"one worker (baseline): {t1 - t0:7.1f} s, {len(texts) / (t1 - t0):6.1f} passages/s")
    print(f"{workers} workers         : {t2 - t1:7.1f} s, {len(texts) / (t2 - t1):6.1f} passages/s")
    print(f"ratio (baseline / {workers} workers): {(t1 - t0) / (t2 - t1):.2f}x; same bytes: {one.tobytes() == many.tobytes()}")


if __name__ == "__main__":
    main()
