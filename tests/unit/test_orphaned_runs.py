"""A run whose process was killed mid-way (or before its run started) does not stay STARTED (or
NOT_STARTED) forever: the next `finrag demo` marks it FAILED (runs launched from the UI are watched by Dagster's run monitoring)."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dagster as dg
import yaml

from finrag_dagster.pipeline import HOST_TAG, PID_TAG, fail_orphaned_runs

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


def test_a_run_whose_process_died_before_it_started_is_marked_failed():
    """A `finrag demo` killed after creating its run but before RUN_START leaves it NOT_STARTED:
    failed by the next demo when its process is gone; a live process's run and a run without a
    finrag process tag (queued from the UI) are left alone."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=60)
    host = {HOST_TAG: socket.gethostname()}
    with dg.DagsterInstance.ephemeral() as inst:
        runs = {
            "dead": dg.DagsterRun(job_name="__ASSET_JOB", tags={PID_TAG: str(dead.pid), **host}),
            "alive": dg.DagsterRun(job_name="__ASSET_JOB", tags={PID_TAG: str(os.getpid()), **host}),
            "queued from the UI": dg.DagsterRun(job_name="__ASSET_JOB"),
        }
        for run in runs.values():
            inst.add_run(run)
            assert inst.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.NOT_STARTED
        assert fail_orphaned_runs(inst) == [runs["dead"].run_id]
        status = {name: inst.get_run_by_id(run.run_id).status for name, run in runs.items()}
        assert status == {
            "dead": dg.DagsterRunStatus.FAILURE,
            "alive": dg.DagsterRunStatus.NOT_STARTED,
            "queued from the UI": dg.DagsterRunStatus.NOT_STARTED,
        }


def test_the_shipped_instance_turns_run_monitoring_on():
    cfg = yaml.safe_load((REPO / ".dagster_home" / "dagster.yaml").read_text())
    assert cfg["run_monitoring"]["enabled"] is True
    from finrag_dagster.cli import DAGSTER_YAML

    assert yaml.safe_load(DAGSTER_YAML)["run_monitoring"] == cfg["run_monitoring"]


def test_the_instance_finrag_demo_writes_is_the_shipped_one():
    """A fresh DAGSTER_HOME gets what .dagster_home/dagster.yaml says (run retries and pools included),
    and the PostgreSQL instance the same settings beside its storage."""
    from finrag_dagster.cli import DAGSTER_YAML

    shipped = yaml.safe_load((REPO / ".dagster_home" / "dagster.yaml").read_text())
    assert yaml.safe_load(DAGSTER_YAML) == shipped
    pg = yaml.safe_load((REPO / "deploy" / "postgres" / "dagster.yaml").read_text())
    assert {k: v for k, v in pg.items() if k != "storage"} == {k: v for k, v in shipped.items() if k != "event_log_storage"}


def test_every_shipped_instance_keeps_dagster_debug_lines_off_the_terminal():
    """The instances finrag ships (the demo's, the one `finrag demo` writes, PostgreSQL's) set the
    same Python log level (test_stage_processes checks what it does)."""
    from finrag_dagster.cli import DAGSTER_YAML

    levels = [
        yaml.safe_load(DAGSTER_YAML)["python_logs"],
        yaml.safe_load((REPO / ".dagster_home" / "dagster.yaml").read_text())["python_logs"],
        yaml.safe_load((REPO / "deploy" / "postgres" / "dagster.yaml").read_text())["python_logs"],
    ]
    assert levels == [{"python_log_level": "INFO"}] * 3
