"""What Dagster's bookkeeping costs per partition, by event log storage: one range run of a
single-asset job over N daily partitions (one materialisation event per partition, as the
pipeline's range runs record them), on each storage in the same process.

    .venv/bin/python benchmarks/event_log.py --partitions 300

Baseline: Dagster's ConsolidatedSqliteEventLogStorage (what the shipped instance used before);
every other row is printed as a ratio to it. Rows: the default per-run SQLite storage of
``dagster.instance_for_test``, the in-memory storage of an ephemeral instance (no persistence: the
floor), finrag's PooledSqliteEventLogStorage (finrag_dagster/defs/event_log.py, the shipped
instance), and each SQLite storage with the planned materialisations recorded as one range event
(``DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS``, what ``finrag demo`` sets for its range runs).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import warnings

import dagster as dg

warnings.filterwarnings("ignore")
PLANNED = "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS"
PARTS = dg.DailyPartitionsDefinition(start_date="2018-01-01")


@dg.asset(partitions_def=PARTS, backfill_policy=dg.BackfillPolicy.single_run())
def bench_asset(context):
    # metadata of the size the pipeline's assets attach (counts, a small markdown preview, a path)
    preview = "| a | b | c |\n|---|---|---|\n" + "| 1 | two | 3.0 |\n" * 5
    return dg.MaterializeResult(
        metadata={"rows": 5, "partitions_written": 1, "preview": dg.MetadataValue.md(preview), "path": dg.MetadataValue.path("/lake/t")}
    )


def storage(kind: str, base: str) -> dict | None:
    if kind == "consolidated":
        return {"module": "dagster._core.storage.event_log", "class": "ConsolidatedSqliteEventLogStorage", "config": {"base_dir": base}}
    if kind == "pooled":
        return {"module": "finrag_dagster.defs.event_log", "class": "PooledSqliteEventLogStorage", "config": {"base_dir": base}}
    return None


def one(kind: str, n: int, planned_range: bool) -> float:
    keys = PARTS.get_partition_keys()[:n]
    tags = {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}
    if planned_range:
        os.environ[PLANNED] = "1"
    else:
        os.environ.pop(PLANNED, None)
    with tempfile.TemporaryDirectory() as d:
        if kind == "ephemeral":
            ctx = dg.DagsterInstance.ephemeral()
        else:
            st = storage(kind, d)
            ctx = dg.instance_for_test(temp_dir=d, overrides={"event_log_storage": st} if st else None)
        with ctx as inst:
            t = time.perf_counter()
            dg.materialize([bench_asset], instance=inst, tags=tags)
            return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3, help="runs per row; the median is shown")
    a = ap.parse_args()
    rows = [
        ("ConsolidatedSqliteEventLogStorage (baseline)", "consolidated", False),
        ("per-run SQLite (instance_for_test default)", "default", False),
        ("in memory (ephemeral instance, no persistence)", "ephemeral", False),
        ("PooledSqliteEventLogStorage (shipped)", "pooled", False),
        ("Consolidated + planned as one range event", "consolidated", True),
        ("Pooled + planned as one range event (finrag demo)", "pooled", True),
    ]
    one("ephemeral", 10, False)  # imports and first-run costs out of the way
    base = None
    print(f"{a.partitions} partitions, one range run each, median of {a.repeat}")
    print(f"{'storage':52s} {'seconds':>8s} {'ms/partition':>13s} {'vs baseline':>12s}")
    for label, kind, planned in rows:
        secs = sorted(one(kind, a.partitions, planned) for _ in range(a.repeat))[a.repeat // 2]
        base = base or secs
        print(f"{label:52s} {secs:8.2f} {secs / a.partitions * 1000:13.2f} {base / secs:11.2f}x")


if __name__ == "__main__":
    main()
