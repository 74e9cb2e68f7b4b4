"""How long a finished step's process lingers in Dagster's multiprocess executor while another step
computes, by how long the executor waits on an empty step queue.

    .venv/bin/python benchmarks/step_events.py --events 1000 --busy 20

One job, two steps in two processes (``max_concurrent: 2``): ``burst`` sends ``--events``
materialisations at once (a range run's loop family ends like this: one per partition and output),
``busy`` computes for ``--busy`` seconds, and ``waiting`` starts in the first slot that frees.
Printed per setting: the seconds from ``burst``'s success to ``waiting``'s start (``burst``'s
process lingering until the executor has read its events) and the whole run. Baseline: Dagster's own wait (``TICK`` = 20 ms); the other row is finrag's
(``finrag_dagster/defs/executor.py``, 2 ms), its idle slot time as a ratio to the baseline's,
measured in the same process. (The run's length does not change here: ``waiting`` does nothing;
in the demo's loop stage the freed slot runs the next family.)
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
from dagster._core.executor import child_process_executor as cpe

warnings.filterwarnings("ignore")
EVENTS = int(os.environ.get("BENCH_EVENTS", "1000"))
BUSY_S = float(os.environ.get("BENCH_BUSY_S", "20"))


@dg.op(out=dg.Out(dg.Nothing), tags={"dagster/priority": "2"})
def burst(context):
    for i in range(EVENTS):
        context.log_event(dg.AssetMaterialization(asset_key="burst", partition=str(i), metadata={"rows": i}))


@dg.op(tags={"dagster/priority": "1"})
def busy():
    t = time.perf_counter()
    while time.perf_counter() - t < BUSY_S:  # a step computing (CPU), as the other loop family does
        sum(i * i for i in range(10_000))


@dg.op
def waiting():
    """The next step: it starts when a process slot frees, i.e. when burst's process has ended."""


@dg.job
def burst_and_busy():
    burst()
    busy()
    waiting()


def one(tick: float) -> tuple[float, float]:
    """(seconds from burst's success to the next step's start in its slot, seconds for the run) with
    the executor waiting ``tick`` on an empty queue."""
    saved = cpe.TICK
    cpe.TICK = tick
    try:
        with tempfile.TemporaryDirectory() as d:
            cfg = {
                "event_log_storage": {"module": "finrag_dagster.defs.event_log", "class": "PooledSqliteEventLogStorage", "config": {"base_dir": d}}
            }
            with dg.instance_for_test(temp_dir=d, overrides=cfg) as inst:
                run_config = {
                    "loggers": {"console": {"config": {"log_level": "CRITICAL"}}},
                    "execution": {"config": {"multiprocess": {"max_concurrent": 2}}},
                }
                t0 = time.time()
                with dg.execute_job(dg.reconstructable(burst_and_busy), instance=inst, run_config=run_config) as res:
                    assert res.success
                    t1 = time.time()
                    at = {
                        (e.step_key, e.dagster_event.event_type_value): e.timestamp for e in inst.all_logs(res.run_id) if e.dagster_event is not None
                    }
                    n = len(inst.fetch_materializations(dg.AssetKey("burst"), limit=EVENTS + 1).records)
                assert n == EVENTS, n
                # burst's step is done in its process (STEP_SUCCESS, logged by the step) until the
                # executor starts the next step in the freed slot (STEP_WORKER_STARTING, logged by the run)
                return at[("waiting", "STEP_WORKER_STARTING")] - at[("burst", "STEP_SUCCESS")], t1 - t0
    finally:
        cpe.TICK = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=EVENTS)
    ap.add_argument("--busy", type=float, default=BUSY_S)
    a = ap.parse_args()
    os.environ["BENCH_EVENTS"], os.environ["BENCH_BUSY_S"] = str(a.events), str(a.busy)  # the step processes read them
    globals().update(EVENTS=a.events, BUSY_S=a.busy)
    from finrag_dagster.defs.executor import STEP_EVENT_POLL_S

    rows = []
    for name, tick in (("Dagster's wait, 20 ms (baseline)", 0.02), (f"finrag's wait, {STEP_EVENT_POLL_S * 1000:.0f} ms", STEP_EVENT_POLL_S)):
        rows.append((name, *one(tick)))
    base = rows[0][1]
    print(f"{a.events} events from one step while the other computes {a.busy:.0f} s (two step processes)")
    print(f"{'setting':<36} {'slot idle after the burst, s':>28} {'run s':>8} {'idle ratio':>10}")
    for name, idle, run in rows:
        print(f"{name:<36} {idle:>28.1f} {run:>8.1f} {base / idle:>6.2f}x")


if __name__ == "__main__":
    main()
