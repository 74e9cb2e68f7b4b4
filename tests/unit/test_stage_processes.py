"""Which stages get the multiprocess executor, and with how many processes (docs/scale.md)."""

import os
from pathlib import Path

import dagster as dg
import yaml

from finrag_dagster.core.settings import Settings
from finrag_dagster.pipeline import stage_processes, stages
from tests.instance import pooled_instance

REPO = Path(__file__).resolve().parents[2]


def test_only_the_loop_runs_its_steps_in_processes_and_only_where_they_can_be_rebuilt():
    s = Settings(execution={"processes": 2})
    assert [st.name for st in stages(s) if st.parallel] == ["loop"]
    loop = next(st for st in stages(s) if st.name == "loop")
    with pooled_instance() as inst:
        assert stage_processes(s, loop.assets, inst, own_resource=True) == 2
        assert stage_processes(s, loop.assets, inst, own_resource=False) == 1  # a caller's resource object
        assert stage_processes(s, loop.assets[:1], inst, own_resource=True) == 1  # one asset: nothing to overlap
        assert stage_processes(Settings(), loop.assets, inst, own_resource=True) == 1  # the default: one process
        cpus = len(os.sched_getaffinity(0))
        assert stage_processes(Settings(execution={"processes": 0}), loop.assets, inst, own_resource=True) == min(cpus, len(loop.assets))
    with dg.DagsterInstance.ephemeral() as eph:
        assert stage_processes(s, loop.assets, eph, own_resource=True) == 1  # step processes need a persistent instance


class SourceError(Exception):
    pass


@dg.op
def _fine():
    return 1


@dg.op
def _broken():
    raise SourceError("news.csv: column 'Date' missing")


@dg.job
def two_steps():
    _fine()
    _broken()


def test_a_step_failing_in_its_own_process_is_raised_with_its_class_and_message():
    """execute_job's raise_on_error does not raise a multiprocess step's error; the stage runner
    raises StepFailed, which the CLI explains like the error itself (asset, message, hint)."""
    from finrag_dagster.cli.errors import explain
    from finrag_dagster.pipeline import StepFailed, step_failure

    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    with pooled_instance() as inst, dg.execute_job(dg.reconstructable(two_steps), instance=inst, raise_on_error=True, run_config=quiet) as res:
        assert not res.success
        err = step_failure(res)
    assert isinstance(err, StepFailed) and err.step_key == "_broken" and err.error_class == "SourceError"
    assert str(err) == "news.csv: column 'Date' missing" and "raise SourceError" in err.remote_stack
    msg = explain(err).message
    assert "in asset `_broken`: news.csv: column 'Date' missing" in msg and "(SourceError; check the [sources] paths" in msg


N_EVENTS = 300


@dg.op(out=dg.Out(dg.Nothing))
def _many_events(context):
    for i in range(N_EVENTS):
        context.log_event(dg.AssetMaterialization(asset_key="burst", partition=str(i)))


@dg.op
def _busy():
    import time

    time.sleep(1.0)


@dg.job
def burst_and_busy():
    _many_events()
    _busy()


def test_definitions_make_the_executor_read_step_events_promptly_and_lose_none(capfd):
    """Building the definitions lowers the multiprocess executor's wait on an empty step queue (a
    Dagster release without that setting fails here, so the lost speed is noticed); a step's burst
    of events, read while another step computes, arrives whole. With the shipped instance's Python
    log level the step processes print no DEBUG line on the terminal, and their events are stored."""
    from dagster._core.executor import child_process_executor as cpe

    from finrag_dagster.defs.build import build_definitions
    from finrag_dagster.defs.executor import STEP_EVENT_POLL_S

    saved = cpe.TICK
    try:
        cpe.TICK = 0.02
        build_definitions(Settings())
        assert cpe.TICK == STEP_EVENT_POLL_S
        quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
        shipped = yaml.safe_load((REPO / ".dagster_home" / "dagster.yaml").read_text())["python_logs"]
        capfd.readouterr()
        with (
            pooled_instance(python_logs=shipped) as inst,
            dg.execute_job(dg.reconstructable(burst_and_busy), instance=inst, run_config=quiet) as res,
        ):
            assert res.success
            mats = inst.fetch_materializations(dg.AssetKey("burst"), limit=N_EVENTS + 10).records
            started = [e for e in inst.all_logs(res.run_id) if e.dagster_event and e.dagster_event.event_type_value == "STEP_WORKER_STARTED"]
        assert sorted(int(r.event_log_entry.asset_materialization.partition) for r in mats) == list(range(N_EVENTS))
        assert len(started) == 2
        out, err = capfd.readouterr()
        assert "STEP_WORKER_STARTED" not in out + err
    finally:
        cpe.TICK = saved
