"""Which stages get the multiprocess executor, and with how many processes (docs/scale.md)."""

import os

import dagster as dg

from finrag_dagster.core.settings import Settings
from finrag_dagster.pipeline import stage_processes, stages
from tests.instance import pooled_instance


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
