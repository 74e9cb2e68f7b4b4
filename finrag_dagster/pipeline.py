"""Run the pipeline in one process (what `finrag demo` and the tests use).

Materialisation goes through Dagster (``dagster.materialize``) against a real instance, so the
runs, materialisations and checks are visible in `dagster dev` afterwards. Each stage is one
single-run backfill over a range of trading days, as the assets are written to process ranges.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import dagster as dg

from .core.calendar import nyse
from .core.settings import Settings
from .defs.build import build_definitions
from .defs.partitions import RANGE_END, RANGE_START
from .defs.resources import FinragResource
from .defs.stages import HISTORY, asset_names, staged_assets
from .sources.preflight import check_dates


@dataclass(frozen=True)
class Stage:
    """A stage of :data:`finrag_dagster.defs.stages.STAGES` as the runner sees it: its assets by name."""

    name: str
    assets: tuple[str, ...]
    span: str | None  # None = unpartitioned
    # long steps that do not depend on each other (the loop's families): worth a process each
    # under execution.processes; the other stages' steps are short or a chain
    parallel: bool = False


def stages(settings: Settings) -> list[Stage]:
    """The stages ``finrag demo`` runs for these settings, in order, with their assets' names."""
    return [Stage(st.name, asset_names(built), st.span, st.parallel) for st, built in staged_assets(settings) if st.runs(settings)]


PID_TAG = "finrag/pid"
HOST_TAG = "finrag/host"


def process_tags() -> dict[str, str]:
    """Which process runs an in-process materialisation (so a later run can tell it died)."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fail_orphaned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark FAILED the in-process runs left NOT_STARTED, STARTING or STARTED by a `finrag` process
    that no longer exists on this host (killed mid-way, or before its run began). Runs launched from
    the UI (no finrag process tag: queued ones are NOT_STARTED too) are watched by Dagster's run
    monitoring instead (on in the shipped dagster.yaml). Returns the run ids marked."""
    host = socket.gethostname()
    marked = []
    statuses = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
    for run in instance.get_runs(dg.RunsFilter(statuses=statuses)):
        pid, h = run.tags.get(PID_TAG), run.tags.get(HOST_TAG)
        if pid is None or h != host or _alive(int(pid)):
            continue
        instance.report_run_failed(run, f"the finrag process (pid {pid}) that ran this ended without finishing it (killed?)")
        if instance.event_log_storage.supports_global_concurrency_limits:  # its pool slots (docs/production.md) go back
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        marked.append(run.run_id)
    return marked


@dataclass(frozen=True)
class RunOptions:
    """How :func:`run_range` runs its stages: the synthetic_world op's config, a call before each stage, the console log level."""

    world_config: dict | None = None
    on_stage: Callable | None = None  # on_stage(stage, asset names) before each stage runs
    log_level: str = "WARNING"


def run_range(
    settings: Settings,
    end: dt.date | None = None,
    decision_start: dt.date | None = None,
    instance: dg.DagsterInstance | None = None,
    resource: FinragResource | None = None,
    only: Sequence[str] | None = None,
    options: RunOptions = RunOptions(),
    history_start: dt.date | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """Materialise every stage over [calendar.start | decision_start, end] in one process
    (``history_start``: the history stage from that day instead, when the days before are in the lake;
    ``options``: the world's config, the per-stage call and the log level, :class:`RunOptions`)."""
    cal = nyse()
    end = end or settings.calendar.end
    decision_start = decision_start or settings.calendar.decision_start
    if decision_start < settings.calendar.decision_start:
        # decision-day assets are partitioned from calendar.decision_start: move it back so the
        # requested days are partitions (the settings handed to the assets say the same)
        settings = settings.with_overrides(calendar={"decision_start": decision_start})
    check_dates(settings, None, end)  # before any run is created (`finrag demo` checks its range and the source paths too)
    hist_days = cal.sessions_in_range(history_start or settings.calendar.start, end)
    dec_days = cal.sessions_in_range(decision_start, end)
    own_resource = resource is None
    resource = resource or FinragResource.from_settings(settings)
    defs = build_definitions(settings, resource)
    all_assets = list(defs.assets)
    instance = instance or dg.DagsterInstance.ephemeral()
    plan = _Plan(settings, instance, all_assets, resource, own_resource, hist_days, dec_days)
    with planned_as_ranges():
        return _run_stages(plan, only=only, options=options)


@dataclass(frozen=True)
class _Plan:
    """What every stage of one :func:`run_range` call runs against."""

    settings: Settings
    instance: dg.DagsterInstance
    assets: list
    resource: FinragResource
    own_resource: bool  # built here from the settings (step processes can rebuild it), not handed in
    hist_days: list  # the history stage's sessions
    dec_days: list  # the decision stages' sessions


PLANNED_AS_RANGE = "DAGSTER_EMIT_PARTITION_SUBSET_IN_PLANNED_EVENTS"


@contextmanager
def planned_as_ranges():
    """While finrag runs its stages, Dagster records a range run's planned materialisations as one
    event per asset holding the partition range, instead of one event per partition (a five-year
    history stage planned ~7,000 events before its first step). The partitions' materialisations are
    still recorded one by one, so the UI shows each partition's status; what Dagster gives up is
    marking a failed range run's partitions "failed" (they show as missing; the run shows failed)."""
    old = os.environ.get(PLANNED_AS_RANGE)
    os.environ[PLANNED_AS_RANGE] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(PLANNED_AS_RANGE, None)
        else:
            os.environ[PLANNED_AS_RANGE] = old


def _run_stages(plan: _Plan, only, options: RunOptions):
    settings, instance, all_assets, resource, own_resource = plan.settings, plan.instance, plan.assets, plan.resource, plan.own_resource
    on_stage, log_level, world_config = options.on_stage, options.log_level, options.world_config
    hist_days, dec_days = plan.hist_days, plan.dec_days
    results = []
    for st in stages(settings):
        names = [a for a in st.assets if (only is None or a in only)]
        if not names:
            continue
        tags = {}
        if st.span is not None:
            days = hist_days if st.span == HISTORY else dec_days
            if not days:
                continue
            tags = {RANGE_START: days[0].isoformat(), RANGE_END: days[-1].isoformat()}
        tags.update(process_tags())
        run_config: dict = {"loggers": {"console": {"config": {"log_level": log_level}}}}
        if "synthetic_world" in names and world_config:
            run_config["ops"] = {"synthetic_world": {"config": world_config}}
        if on_stage:
            on_stage(st, names)
        procs = stage_processes(settings, names, instance, own_resource) if st.parallel else 1
        if procs > 1:
            res = run_stage_processes(settings, names, instance, tags, run_config, procs)
        else:
            res = dg.materialize(
                all_assets,
                selection=[dg.AssetKey.from_user_string(n) for n in names],
                instance=instance,
                tags=tags,
                run_config=run_config,
                resources={"finrag": resource},
                raise_on_error=True,
            )
        results.append(res)
    return results


def stage_processes(settings: Settings, names: Sequence[str], instance: dg.DagsterInstance, own_resource: bool) -> int:
    """How many processes a parallel stage's steps get: ``execution.processes`` (0: one per CPU),
    capped by its assets; 1 where the multiprocess executor cannot run (an in-memory instance, or
    a resource object handed in by the caller, which step processes could not rebuild)."""
    n = settings.execution.processes or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if n <= 1 or len(names) <= 1 or instance.is_ephemeral or not own_resource:
        return 1
    return min(n, len(names))


STAGE_JOB = "finrag_stage"


def stage_job(settings_json: str, names: list[str]) -> dg.JobDefinition:
    """The assets ``names`` as one job over the definitions of these settings: rebuilt from the
    settings in every step process of the multiprocess executor."""
    s = Settings.model_validate_json(settings_json)
    defs = build_definitions(s, FinragResource.from_settings(s))
    job = dg.define_asset_job(STAGE_JOB, selection=dg.AssetSelection.assets(*[dg.AssetKey.from_user_string(n) for n in names]))
    return dg.Definitions(assets=list(defs.assets), jobs=[job], resources=defs.resources).resolve_job_def(STAGE_JOB)


def run_stage_processes(settings: Settings, names: Sequence[str], instance: dg.DagsterInstance, tags: dict, run_config: dict, procs: int):
    """One stage as one run whose independent steps run at once in up to ``procs`` processes."""
    job = dg.build_reconstructable_job(
        __name__, "stage_job", reconstructable_kwargs={"settings_json": settings.model_dump_json(), "names": list(names)}
    )
    cfg = {**run_config, "execution": {"config": {"multiprocess": {"max_concurrent": procs}}}}
    with dg.execute_job(job, instance=instance, run_config=cfg, tags=tags, raise_on_error=True) as res:
        if not res.success:  # a step's error stays in its process: raise_on_error does not raise it here
            raise step_failure(res)
        return res


class StepFailed(RuntimeError):
    """A step that ran in its own process failed: its error's class name and message (the error
    itself cannot cross the process boundary). ``error_class`` is what the CLI's hints match."""

    def __init__(self, step_key: str, error_class: str, message: str, stack: str = ""):
        super().__init__(message)
        self.step_key, self.error_class, self.remote_stack = step_key, error_class, stack


def step_failure(res) -> StepFailed:
    """The first failed step's innermost error that is not one of Dagster's own wrappers."""
    events = res.get_step_failure_events()
    if not events:
        return StepFailed("", "DagsterRunFailedError", f"run {res.run_id} failed before any step failed (see the run in the Dagster UI)")
    ev = events[0]
    err = ev.event_specific_data.error
    inner = err
    while err is not None:
        inner = err
        if not err.cls_name.startswith("Dagster"):
            break
        err = err.cause
    first = inner.message.strip().splitlines()[0] if inner.message.strip() else inner.cls_name
    message = first.split(": ", 1)[1] if first.split(": ", 1)[0].endswith(inner.cls_name) else first
    return StepFailed(ev.step_key, inner.cls_name, message, "".join(inner.stack))
