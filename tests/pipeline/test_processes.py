"""A stage's independent steps in several processes give the lake of one process (docs/scale.md).

``execution.processes = 2`` runs each stage through Dagster's multiprocess executor, so the
loop's families (which share only their inputs and the reader cache) run at the same time in
their own processes; every parquet file must be the same bytes as with ``processes = 1`` (the
reader cache's wall-clock latency apart), and the families' steps must really have overlapped.
"""

from __future__ import annotations

import datetime as dt
import shutil

import dagster as dg
import pytest

from finrag_dagster.pipeline import run_range, stages
from tests.instance import pooled_instance

from .test_ray_engine import lake_files
from .world import DECISION_START, short_settings

pytestmark = pytest.mark.slow

END_P = dt.date(2019, 2, 12)
FAMILIES = ("no_memory", "source_memory", "shuffled_labels")


def _run(s, stage_names=("loop",)) -> tuple[dict[str, int], dict[str, tuple[float, float]]]:
    """Materialise ``stage_names``; returns, per step of the last run, its process id and its
    (start, end) time."""
    only = [a for st in stages(s) if st.name in stage_names for a in st.assets]
    with pooled_instance() as inst:
        results = run_range(s, end=END_P, decision_start=DECISION_START, instance=inst, only=only)
        loop_run = results[-1].run_id
        spans: dict[str, list[float]] = {}
        for e in inst.all_logs(loop_run, of_type={dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS}):
            spans.setdefault(e.step_key, []).append(e.timestamp)
        pids = {e.step_key: e.dagster_event.pid for e in inst.all_logs(loop_run, of_type=dg.DagsterEventType.STEP_START)}
    return pids, {k: (min(v), max(v)) for k, v in spans.items()}


def test_two_processes_write_the_one_process_lake(world_raw, tmp_path):
    base = short_settings(world_raw, tmp_path / "one", variants={"families": FAMILIES})
    _run(base, ("sources", "history", "decisions"))  # the loop's inputs, once; then the loop both ways
    shutil.copytree(tmp_path / "one", tmp_path / "two")
    _, spans_one = _run(base.with_overrides(execution={"processes": 1}))
    pids, spans_two = _run(base.with_overrides(lake_dir=tmp_path / "two", execution={"processes": 2}))
    one, two = lake_files(tmp_path / "one"), lake_files(tmp_path / "two")
    assert one.keys() == two.keys() and len(one) > 100
    differ = sorted(k for k in one if one[k] != two[k])
    assert not differ, differ[:10]
    # the families' loop steps ran in their own processes, two of them at the same time
    fam_steps = [k for k in spans_two if k.startswith(FAMILIES)]  # <family>_loop and <family>__feedback
    assert len({pids[k] for k in fam_steps}) == len(fam_steps) >= 2 * len(FAMILIES)
    overlap = any(
        spans_two[a][0] < spans_two[b][1] and spans_two[b][0] < spans_two[a][1] for i, a in enumerate(fam_steps) for b in fam_steps[i + 1 :]
    )
    assert overlap, spans_two
    # one process: the steps one after another in this process
    assert not any(
        spans_one[a][0] < spans_one[b][1] and spans_one[b][0] < spans_one[a][1] for i, a in enumerate(spans_one) for b in list(spans_one)[i + 1 :]
    )
