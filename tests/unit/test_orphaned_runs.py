"""A run whose process was killed mid-way does not stay STARTED forever: the next `finrag demo`
marks it FAILED (runs launched from the UI are watched by Dagster's run monitoring)."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dagster as dg
import yaml

from finrag_dagster.pipeline import fail_orphaned_runs

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent("""
    import sys, time, pathlib
    import dagster as dg
    from finrag_dagster.pipeline import process_tags

    marker = pathlib.Path(sys.argv[1])

    @dg.asset
    def slow() -> None:
        marker.write_text("started")
        time.sleep(120)

    with dg.DagsterInstance.get() as inst:
        dg.materialize([slow], instance=inst, tags=process_tags())
""")


def test_a_killed_run_is_marked_failed_and_a_live_one_is_not(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(REPO)}
    marker = tmp_path / "marker"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(marker)], env=env)
    try:
        deadline = time.time() + 180
        while not marker.exists():
            assert proc.poll() is None and time.time() < deadline, "the run never started"
            time.sleep(0.5)
        with dg.DagsterInstance.from_config(str(home)) as inst:
            (run,) = inst.get_runs()
            assert run.status == dg.DagsterRunStatus.STARTED
            assert fail_orphaned_runs(inst) == []  # its process is alive: left alone
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        with dg.DagsterInstance.from_config(str(home)) as inst:
            assert inst.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.STARTED  # what users saw forever
            assert fail_orphaned_runs(inst) == [run.run_id]
            assert inst.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
            assert fail_orphaned_runs(inst) == []
    finally:
        if proc.poll() is None:
            proc.kill()


def test_the_shipped_instance_turns_run_monitoring_on():
    cfg = yaml.safe_load((REPO / ".dagster_home" / "dagster.yaml").read_text())
    assert cfg["run_monitoring"]["enabled"] is True
    from finrag_dagster.cli import DAGSTER_YAML

    assert yaml.safe_load(DAGSTER_YAML)["run_monitoring"] == cfg["run_monitoring"]
