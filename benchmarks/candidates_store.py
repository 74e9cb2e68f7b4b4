"""The daily run's evidence store: rebuilt from the whole evidence table vs extended by one day.

    .venv/bin/python benchmarks/candidates_store.py --lake <a lake with evidence> --days 5

A daily schedule materialises one decision day at a time. Before the saved store, the candidate
stage read every evidence partition since ``calendar.start`` and tokenised every passage on each
such run (the baseline here: ``lake.read`` + ``Store.from_evidence``). With it, a run loads the saved
segments and appends the new day (``store_cache.load_store``). For each of the last ``--days``
evidence days, both are timed in this process and the two stores are compared array by array.
The lake is not written: its evidence folder is linked into a temporary lake.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from finrag_dagster.core.tables import Lake  # noqa: E402
from finrag_dagster.core.retrieval.pool import Store  # noqa: E402
from finrag_dagster.core.retrieval.store_cache import load_store  # noqa: E402


def same(a: Store, b: Store) -> bool:
    cols = ("passage_id", "public_ns", "ticker", "family", "url_code", "title_code", "cluster_code", "emb")
    return (
        all(np.array_equal(getattr(a, f), getattr(b, f)) for f in cols)
        and all(np.array_equal(getattr(a.tm.X, f), getattr(b.tm.X, f)) for f in ("indptr", "indices", "data"))
        and list(a.tm.vocab.ids) == list(b.tm.vocab.ids)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lake", required=True, help="a lake whose evidence table is materialised")
    ap.add_argument("--days", type=int, default=5, help="time the last N days, one run each")
    args = ap.parse_args()
    src = Lake(args.lake)
    dates = src.materialized_dates("evidence")
    if len(dates) <= args.days:
        sys.exit(f"{args.lake}: {len(dates)} evidence days; need more than --days {args.days}")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "evidence").symlink_to(src.root / "evidence")
        lake = Lake(tmp)
        key = {"start": dates[0]}
        t0 = time.perf_counter()
        load_store(lake, dates[: -args.days], key)
        first = time.perf_counter() - t0
        base, inc, reuse, ok = [], [], [], True
        for k in range(len(dates) - args.days, len(dates)):
            hist = dates[: k + 1]
            t0 = time.perf_counter()
            ref = Store.from_evidence(lake.read("evidence", dates=hist))
            base.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            st, rep = load_store(lake, hist, key)
            inc.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            load_store(lake, hist, key)
            reuse.append(time.perf_counter() - t0)
            ok &= same(st, ref) and rep.partitions_read == 1
        print(f"{args.lake}: {len(dates)} evidence days, {len(st):,} passages; saved store built once in {first:.1f} s")
        print(f"{'one-day run, store from':44s} {'median s':>9s}")
        print(f"{'the whole evidence table (baseline)':44s} {np.median(base):9.2f}")
        print(f"{'the saved store + the new day':44s} {np.median(inc):9.2f}   ratio {np.median(base) / np.median(inc):.1f}x")
        print(f"{'the saved store, nothing new':44s} {np.median(reuse):9.2f}   ratio {np.median(base) / np.median(reuse):.1f}x")
        print(f"identical stores: {ok}")
        if not ok:
            sys.exit(1)


if __name__ == "__main__":
    main()
