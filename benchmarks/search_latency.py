"""Warm latency of ``SearchEngine.search`` against a plain BM25 + cosine baseline, same run.

    nice -n 15 .venv/bin/python benchmarks/search_latency.py --lake <lake> [--as-of 2019-12-31] [--tile N]

The query set is the synthetic one of ``benchmarks/retrieval_quality.py`` built on that lake
(metric, compare, guidance and risk queries; event queries too when the lake has its ``_world``
truth) plus the query texts of the hand-judged real set ``benchmarks/data/real_queries.jsonl``
(company names the lake does not know are just words to it). The first ``--warm`` queries (10) run once untimed
in every mode (warm-up: encoder, DuckDB view, the BM25 weights), then every query is timed once per method:

* ``SearchEngine.search`` in each mode (BM25 only, dense only, hybrid, full pipeline), query
  parsing and encoding included;
* the plain baseline of ``retrieval_quality.py``: ``rank_bm25.BM25Okapi.get_scores`` over the
  same visible passages + numpy cosine over their stored MiniLM vectors, equal-weight min-max
  fusion, query encoding included.

``--tile N`` makes a bigger lake of the same profile in memory: the evidence is repeated N times,
copy i with its passage ids suffixed and its dates moved back i times the evidence's span (so
every copy is public before as-of and the copies do not overlap in time). Only the latency means
anything on a tiled lake (its texts repeat).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.retrieval_quality import MODE_NAMES, MODES, REAL_QUERIES, PlainBaseline, build_queries  # noqa: E402
from finrag_dagster.core.tables import Lake  # noqa: E402
from finrag_dagster.core.retrieval.engine import SearchEngine  # noqa: E402
from finrag_dagster.core.retrieval.search import SearchConfig  # noqa: E402


def tile(ev: pl.DataFrame, n: int) -> pl.DataFrame:
    """``ev`` repeated ``n`` times; copy i has ids suffixed ``~i`` and all its dates moved back i spans."""
    if n <= 1:
        return ev
    span = ev["public_time"].max() - ev["public_time"].min() + dt.timedelta(days=1)
    parts = [ev]
    for i in range(1, n):
        shift = span * i
        cols = [pl.col("passage_id") + f"~{i}", pl.col("public_time") - shift]
        cols += [pl.col(c) + f"~{i}" for c in ("doc_id", "url", "dup_cluster") if c in ev.columns]
        if ev.schema.get("date") == pl.Date:
            cols.append(pl.col("date") - shift)
        parts.append(ev.with_columns(cols))
    return pl.concat(parts, how="vertical_relaxed")


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs) * 1000.0, q))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lake", default="data_lake")
    ap.add_argument("--as-of", default=None, help="default: the last evidence day")
    ap.add_argument("--per-kind", type=int, default=10)
    ap.add_argument("--tile", type=int, default=1)
    ap.add_argument("--warm", type=int, default=10, help="queries answered untimed per mode before the timing")
    ap.add_argument("--no-real", action="store_true", help="leave out the real set's query texts")
    args = ap.parse_args()
    lake = Lake(args.lake)
    ev = lake.read("evidence")
    if ev.height == 0:
        raise SystemExit(f"no evidence in {lake.root}")
    as_of = args.as_of or max(lake.materialized_dates("evidence"))
    day = dt.date.fromisoformat(as_of)
    truth = lake.root / "_world" / "truth"
    docs = pl.read_parquet(truth / "documents.parquet") if (truth / "documents.parquet").exists() else None
    events = pl.read_parquet(truth / "events.parquet") if (truth / "events.parquet").exists() else None
    qs = [q["query"] for q in build_queries(ev, docs, events, lake.read("universe"), day, args.per_kind, np.random.default_rng(0))]
    if not args.no_real:
        qs += [json.loads(line)["query"] for line in REAL_QUERIES.read_text().splitlines() if line.strip()]
    ev = tile(ev, args.tile)
    t0 = time.perf_counter()
    engine = SearchEngine(lake, as_of, evidence=ev)
    t_engine = time.perf_counter() - t0
    t0 = time.perf_counter()
    base = PlainBaseline(ev, engine.as_of_ns)
    t_base = time.perf_counter() - t0
    n_vis = engine.index.df.height
    cfg = SearchConfig(k=20)
    for q in qs[: args.warm]:  # warm-up, untimed
        for m in MODES:
            engine.search(q, mode=m, cfg=cfg)
    base.search(qs[0])
    lat: dict[str, list[float]] = {m: [] for m in (*MODES, "baseline")}
    for q in qs:
        for m in lat:
            t0 = time.perf_counter()
            if m == "baseline":
                base.search(q, k=20)
            else:
                engine.search(q, mode=m, cfg=cfg)
            lat[m].append(time.perf_counter() - t0)
    b50, b95 = pct(lat["baseline"], 50), pct(lat["baseline"], 95)
    print(
        f"lake {lake.root}{f' tiled x{args.tile}' if args.tile > 1 else ''}: {ev.height} passages, {n_vis} public before {as_of}; "
        f"{len(qs)} queries, each timed once per method after {min(args.warm, len(qs))} untimed per mode"
    )
    print(f"load: SearchEngine {t_engine:.1f} s, baseline index {t_base:.1f} s\n")
    print("| method | p50 ms | p95 ms | p50 / baseline p50 | p95 / baseline p95 |")
    print("|---|---|---|---|---|")
    for m, xs in lat.items():
        label = f"`SearchEngine.search` {MODE_NAMES[m]}" if m != "baseline" else "plain baseline: rank_bm25 + numpy cosine, min-max"
        p50, p95 = pct(xs, 50), pct(xs, 95)
        print(f"| {label} | {p50:.1f} | {p95:.1f} | {p50 / b50:.2f} | {p95 / b95:.2f} |")


if __name__ == "__main__":
    main()
