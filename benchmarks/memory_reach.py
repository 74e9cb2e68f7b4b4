"""Is it the world or eq. 6? How many candidate pools a source memory could change at all.

    .venv/bin/python benchmarks/memory_reach.py --world-lake data_lake            # after `make demo`
    .venv/bin/python benchmarks/memory_reach.py --world-lake data_lake --real     # and the real sample

For each lake's candidate pools (the reader's 20 candidates per anchor): how many hold more than
one source family, the static relevance gap between ranks 5 and 6 (and 4 and 7), and the share of
pools whose top 5 a memory bounded like seed 000 eq. 6 (each family's term in [−λδ, λδ]) could
change with the most favourable utilities (core/evaluation/reach.py). ``--real`` builds (once) the
real development sample's pools over its test split (2022–2023) in .benchmarks/real_lake, next to
the evidence benchmarks/retrieval_quality.py built there. Nothing else is written.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.retrieval_quality import DEFAULT_SAMPLE, ensure_real_lake, real_settings  # noqa: E402
from finrag_dagster.core.evaluation.reach import pool_reach, reach_summary  # noqa: E402
from finrag_dagster.core.tables import Lake  # noqa: E402

REAL_LAKE = Path(__file__).resolve().parents[1] / ".benchmarks" / "real_lake"
REAL_TEST = (dt.date(2022, 1, 3), dt.date(2023, 12, 29))
POOL_ASSETS = ["anchors", "context_cards", "candidates"]


def real_pools(lake_dir: Path, sample: Path) -> Lake:
    """The real sample's lake with candidate pools over its test split (built once)."""
    lake, _ = ensure_real_lake(lake_dir, sample)
    if lake.materialized_dates("candidates"):
        return lake
    from finrag_dagster.cli import lake_lock
    from finrag_dagster.pipeline import RunOptions, run_range

    s = real_settings(lake_dir, sample)
    print(f"building the real sample's candidate pools {REAL_TEST[0]} .. {REAL_TEST[1]} in {lake.root} ...", flush=True)
    t0 = time.perf_counter()
    with lake_lock(s.lake_dir):
        run_range(s, end=REAL_TEST[1], decision_start=REAL_TEST[0], only=POOL_ASSETS, options=RunOptions(log_level="ERROR"))
    print(f"built in {time.perf_counter() - t0:.0f} s", flush=True)
    return Lake(lake_dir)


def row(name: str, cands: pl.DataFrame, lam: float, delta: float) -> dict:
    s = reach_summary(pool_reach(cands, lam, delta))
    return {"lake": name, "λ, δ": f"{lam:.2f}, {delta:.2f}", **s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--world-lake", default="data_lake", help="a lake of the embedded world (make demo's data_lake)")
    ap.add_argument("--real", action="store_true", help="also the real development sample (its test split)")
    ap.add_argument("--sample", default=str(DEFAULT_SAMPLE))
    ap.add_argument("--settings", default="0.30:0.20,0.50:0.30", help="lambda:delta pairs")
    args = ap.parse_args()
    lakes = {"embedded world (demo)": Lake(args.world_lake)}
    if args.real:
        lakes["real sample (test split)"] = real_pools(REAL_LAKE, Path(args.sample))
    rows = []
    for name, lake in lakes.items():
        cands = lake.read("candidates")
        for pair in args.settings.split(","):
            lam, delta = (float(x) for x in pair.split(":"))
            rows.append(row(name, cands, lam, delta))
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=3):
        print(pl.DataFrame(rows))


if __name__ == "__main__":
    main()
