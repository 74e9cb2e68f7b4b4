"""Bytes of the Tree-of-Experience tables per decision day: the daily state plus the content written
once, against one full snapshot per day (every leaf's principle and embedding repeated daily).

    .venv/bin/python benchmarks/experience_storage.py                  # builds the small world, ~4 min on 2 cores
    .venv/bin/python benchmarks/experience_storage.py --lake data_lake # measures an existing lake

Without ``--lake`` it generates the pipeline tests' small world (tests/pipeline/world.py: 6 tickers,
news from 2018-11) and materialises the prior tree and the ``toe`` and ``source_memory_toe`` loops
for the decision days 2019-02-01 .. ``--end`` (validation February, test from March: the toe trees
reset to the prior on 2019-03-01). The full-snapshot figure rewrites each day's joined rows as one
parquet file with the lake's writer options, which is byte for byte what the single
``experience_tree`` table stored per day before the split.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_dagster.core.storage.lake import _WRITE_OPTS  # noqa: E402
from finrag_dagster.core.tables import Lake  # noqa: E402
from finrag_dagster.core.experience.store import CONTENT, STATE, read_rows  # noqa: E402

ONLY = [
    "universe",
    "prices",
    "news_raw",
    "filings_raw",
    "returns",
    "evidence",
    "anchors",
    "context_cards",
    "candidates",
    "labels",
    "experience_tree",
    "toe/experience_tree",
    "toe/contexts",
    "toe/reader_outputs",
    "source_memory_toe/memory_snapshot",
    "source_memory_toe/experience_tree",
    "source_memory_toe/contexts",
    "source_memory_toe/reader_outputs",
]


def build(root: Path, end: dt.date) -> Lake:
    """The small world with the experience tree and the two toe loops materialised through ``end``."""
    import dagster as dg

    from finrag_dagster.pipeline import run_range
    from tests.pipeline.world import DECISION_START, build_world, files_settings

    raw = build_world(root / "world")
    s = files_settings(raw, root / "lake", variants={"families": ("toe", "source_memory_toe")}, memory={"test_params": "settings"})
    with dg.instance_for_test() as inst:
        run_range(s, end=end, decision_start=DECISION_START, instance=inst, only=ONLY)
    return Lake(root / "lake")


def snapshot_bytes(lake: Lake, tree_id: str, day: str) -> int:
    """One day's tree as a single full-row parquet file (the layout before the split)."""
    buf = io.BytesIO()
    pq.write_table(read_rows(lake, tree_id, day), buf, **_WRITE_OPTS)
    return buf.tell()


def measure(lake: Lake) -> list[dict]:
    out = []
    for tree_id in sorted(p.name.split("=", 1)[1] for p in (lake.root / STATE).glob("tree_id=*")):
        days = lake.materialized_dates(STATE, tree_id=tree_id)
        state = [lake.path(STATE, tree_id=tree_id, date=d).stat().st_size for d in days]
        content = [f.stat().st_size for f in lake.partition_files(CONTENT, tree_id=tree_id)]
        snap = [snapshot_bytes(lake, tree_id, d) for d in days]
        out.append(
            {
                "tree_id": tree_id,
                "days": len(days),
                "snapshot": sum(snap),
                "snapshot_first_last": (snap[0], snap[-1]),
                "state": sum(state),
                "state_first_last": (state[0], state[-1]),
                "content": sum(content),
                "content_files": len(content),
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lake", type=Path, help="measure this lake instead of building the small world")
    ap.add_argument("--end", default="2019-06-28", help="last decision day of the small world run")
    args = ap.parse_args()
    if args.lake:
        lake = Lake(args.lake)
    else:
        t0 = time.time()
        lake = build(Path(tempfile.mkdtemp(prefix="experience_storage_")), dt.date.fromisoformat(args.end))
        print(f"built {lake.root} in {time.time() - t0:.0f} s")
    rows = measure(lake)
    print(f"{'tree_id':<18} {'days':>4} {'snapshots':>11} {'(first, last)':>18} {'state':>9} {'(first, last)':>14} {'content':>9} {'files':>5}")
    for r in rows:
        print(
            f"{r['tree_id']:<18} {r['days']:>4} {r['snapshot']:>11,} {str(r['snapshot_first_last']):>18} {r['state']:>9,} "
            f"{str(r['state_first_last']):>14} {r['content']:>9,} {r['content_files']:>5}"
        )
    days = max((r["days"] for r in rows), default=0)
    before = sum(r["snapshot"] for r in rows)
    after = sum(r["state"] + r["content"] for r in rows)
    if days:
        print(
            f"per decision day: {before / days:,.0f} bytes as full snapshots, {after / days:,.0f} as state + content "
            f"({before / max(after, 1):.1f}x less)"
        )


if __name__ == "__main__":
    main()
