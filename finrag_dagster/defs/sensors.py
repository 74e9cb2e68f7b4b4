"""Sensors and the daily schedule: ``matured_feedback``, ``new_market_data``,
``finrag_daily_schedule`` and ``decisions_after_ingest``.

``matured_feedback`` requests exactly the ``labels`` and ``<family>/feedback`` partitions whose
horizons matured on the new closes, never earlier; ``new_market_data`` and the schedule request the
ingest job for sessions without an ``evidence`` partition; ``decisions_after_ingest`` runs the
decision job over the days a successful ingest run covered. The schedule and ``new_market_data``
can both be on: a day is ingested, and then decided, once. The rules: docs/feedback_loop.md,
"Sensors and schedule" and "`defs/sensors.py`: design notes"; docs/production.md, "The automations".
"""

from __future__ import annotations

import datetime as dt

import dagster as dg

from ..core.calendar import maturing_on, nyse
from ..core.settings import HORIZON_NAMES
from ..core.status import last_market_day
from ..sources.registry import source_fingerprint
from ..sources.replay import replay_now
from .partitions import RANGE_END, RANGE_START
from .resources import FinragResource

# An ingest run in one of these has not finished: the days it covers are taken (CANCELING is not:
# it will not materialise them)
IN_FLIGHT_STATUSES = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
PARTITION_TAG = "dagster/partition"
INGEST_LAST_ASSET = dg.AssetKey("evidence")  # the ingest job's last stage: materialised = ingested


def run_days(tags: dict) -> list[str]:
    """The trading days a run covers, from its tags: its partition, or its partition range."""
    if tags.get(PARTITION_TAG):
        return [tags[PARTITION_TAG]]
    if tags.get(RANGE_START) and tags.get(RANGE_END):
        return [d.isoformat() for d in nyse().sessions_in_range(tags[RANGE_START], tags[RANGE_END])]
    return []


def in_flight_ingest_days(instance: dg.DagsterInstance, ingest_job: str) -> dict[str, str]:
    """{day: run id} for the days covered by a run that has not finished (queued, not started,
    starting, started) and will materialise ``evidence``: a run of the ingest job, or a run whose
    asset selection holds ``evidence`` (a backfill launched from the UI)."""
    out: dict[str, str] = {}
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=IN_FLIGHT_STATUSES)):
        sel = run.asset_selection
        if (run.job_name == ingest_job and sel is None) or (sel is not None and INGEST_LAST_ASSET in sel):
            for d in run_days(dict(run.tags)):
                out.setdefault(d, run.run_id)
    return out


def _segments(days: list[str], keep: set[str]) -> list[tuple[str, str]]:
    """The maximal runs of consecutive ``days`` (in order) that are in ``keep``, as (first, last)."""
    out: list[tuple[str, str]] = []
    prev_kept = False
    for d in days:
        if d in keep:
            if prev_kept:
                out[-1] = (out[-1][0], d)
            else:
                out.append((d, d))
        prev_kept = d in keep
    return out


def missing_sessions(sessions: list[str], done: list[str]) -> list[str]:
    """The ``sessions`` (ISO days, in order) whose ingest is not in the lake: the new ones after the
    last materialised day and any earlier one whose run failed while a later day's succeeded."""
    have = set(done)
    return [d for d in sessions if d not in have]


def matured_decision_days(new_market_days: list[str], first_day: str) -> dict[str, list[str]]:
    """{decision day: horizons} whose close(D+h) is among the newly seen market days (core/calendar.py ``maturing_on``)."""
    cal = nyse()
    out: dict[str, list[str]] = {}
    for m in new_market_days:
        for d, h in maturing_on(cal, m, first_day):
            out.setdefault(d, []).append(HORIZON_NAMES[h])
    return dict(sorted(out.items()))


def build_matured_feedback_sensor(families: tuple[str, ...], interval_s: int = 300) -> dg.SensorDefinition:
    targets = [dg.AssetKey("labels")] + [dg.AssetKey([f, "feedback"]) for f in families]

    @dg.sensor(
        name="matured_feedback",
        minimum_interval_seconds=interval_s,
        default_status=dg.DefaultSensorStatus.STOPPED,
        asset_selection=targets,
        description="Requests labels and feedback partitions only once close(D+h) is in prices.",
    )
    def matured_feedback(context: dg.SensorEvaluationContext, finrag: FinragResource) -> dg.SensorResult:
        s = finrag.settings()
        lake = finrag.lake()
        cal = nyse()
        latest = last_market_day(lake, s.market_ticker)
        if latest is None:
            return dg.SensorResult(skip_reason="no market bars in the lake yet")
        cursor = context.cursor or cal.offset(latest, -1).isoformat()
        if latest <= cursor:
            return dg.SensorResult(skip_reason=f"no new closes since {cursor}")
        new_days = [d.isoformat() for d in cal.sessions_in_range(cal.next_session(cursor), latest)]
        first = cal.sessions_in_range(s.calendar.decision_start, s.calendar.end)[0].isoformat()
        due = matured_decision_days(new_days, first)
        requests = [
            dg.RunRequest(
                run_key=f"matured:{d}:{latest}",
                partition_key=d,
                asset_selection=targets,
                tags={"finrag/matured_horizons": ",".join(hs), "finrag/market_day": latest},
            )
            for d, hs in due.items()
        ]
        return dg.SensorResult(run_requests=requests, cursor=latest)

    return matured_feedback


def build_new_market_data_sensor(job: dg.UnresolvedAssetJobDefinition, interval_s: int = 600) -> dg.SensorDefinition:
    @dg.sensor(
        name="new_market_data",
        job=job,
        minimum_interval_seconds=interval_s,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="When source files change, runs the daily chain for the sessions not yet materialised (one range run).",
    )
    def new_market_data(context: dg.SensorEvaluationContext, finrag: FinragResource):
        s = finrag.settings()
        try:
            fp = source_fingerprint(s)
        except Exception as e:  # sources not there yet: say so instead of failing the daemon
            return dg.SkipReason(f"sources not readable: {e}")
        if fp == context.cursor:
            return dg.SkipReason("source files unchanged")
        cal = nyse()
        lake = finrag.lake()
        done = lake.materialized_dates("evidence")  # the ingest job's last stage
        # a landing folder being replayed (`finrag replay`) carries its own clock
        replayed = replay_now(s)
        today = replayed.to_pydatetime() if replayed is not None else dt.datetime.now(dt.timezone.utc)
        last_complete = cal.decision_day(today) if cal.close_time(cal.decision_day(today)) <= today else cal.previous_session(cal.decision_day(today))
        last = min(last_complete, s.calendar.end)
        start = dt.date.fromisoformat(done[0]) if done else s.calendar.start
        sessions = [d.isoformat() for d in cal.sessions_in_range(start, last)] if start <= last else []
        days = missing_sessions(sessions, done)
        if not days:
            context.update_cursor(fp)
            return dg.SkipReason("every completed session is materialised")
        busy = in_flight_ingest_days(context.instance, job.name)  # e.g. the schedule's run of the day
        todo = [d for d in days if d not in busy]
        if not todo:
            # the cursor stays: next tick looks again, and requests these days if that run failed
            runs = sorted({busy[d][:8] for d in days})
            return dg.SkipReason(f"{days[0]}..{days[-1]} are being ingested by run(s) {', '.join(runs)}")
        if len(todo) == len(days):
            context.update_cursor(fp)
        # else the cursor stays, for the same reason; a request repeated next tick has the same run
        # key, and Dagster does not launch a run key twice
        requests = [
            dg.RunRequest(run_key=f"new-data:{fp[:16]}:{a}:{b}", tags={RANGE_START: a, RANGE_END: b}) for a, b in _segments(sessions, set(todo))
        ]
        return requests[0] if len(requests) == 1 else requests

    return new_market_data


def build_daily_schedule(job: dg.UnresolvedAssetJobDefinition) -> dg.ScheduleDefinition:
    @dg.schedule(
        name="finrag_daily_schedule",
        job=job,
        cron_schedule="30 18 * * 1-5",
        execution_timezone="America/New_York",
        default_status=dg.DefaultScheduleStatus.STOPPED,
        description="After the US close: the day's whole chain (ingest, evidence, anchors, pools, reader, labels, feedback).",
    )
    def finrag_daily_schedule(context: dg.ScheduleEvaluationContext, finrag: FinragResource):
        day = context.scheduled_execution_time.date()  # already in America/New_York
        cal = nyse()
        if not cal.is_session(day):
            return dg.SkipReason(f"{day} is not a trading day")
        key = day.isoformat()
        # `new_market_data` may have come first: its run done, or still going
        if key in finrag.lake().materialized_dates("evidence"):
            return dg.SkipReason(f"{key} is already ingested (evidence materialised)")
        run_id = in_flight_ingest_days(context.instance, job.name).get(key)
        if run_id:
            return dg.SkipReason(f"{key} is being ingested by run {run_id[:8]}")
        return dg.RunRequest(run_key=f"daily:{day}", partition_key=key)

    return finrag_daily_schedule


def decision_range(tags: dict, partition_key: str | None, first_decision_day: str, last_day: str) -> tuple[str, str] | None:
    """The decision days an ingest run covered: its partition (or range) from the first decision day on."""
    if partition_key:
        a = b = partition_key
    elif RANGE_START in tags and RANGE_END in tags:
        a, b = tags[RANGE_START], tags[RANGE_END]
    else:
        return None
    a = max(a, first_decision_day)
    b = min(b, last_day)
    return (a, b) if a <= b else None


def build_decisions_after_ingest_sensor(
    ingest: dg.UnresolvedAssetJobDefinition, daily: dg.UnresolvedAssetJobDefinition, interval_s: int = 30
) -> dg.SensorDefinition:
    @dg.run_status_sensor(
        name="decisions_after_ingest",
        run_status=dg.DagsterRunStatus.SUCCESS,
        monitored_jobs=[ingest],
        request_job=daily,
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=interval_s,
        description="After each successful ingest run, runs the decision chain over the same decision days (one range run).",
    )
    def decisions_after_ingest(context: dg.RunStatusSensorContext, finrag: FinragResource):
        run = context.dagster_run
        s = finrag.settings()
        cal = nyse()
        first = cal.sessions_in_range(s.calendar.decision_start, s.calendar.end)
        if not first:
            return dg.SkipReason("no decision day in the calendar")
        span = decision_range(dict(run.tags), run.tags.get("dagster/partition"), first[0].isoformat(), first[-1].isoformat())
        if span is None:
            return dg.SkipReason(f"ingest run {run.run_id[:8]} covered no decision day")
        a, b = span
        tags = {"finrag/after_ingest": run.run_id}
        if a == b:
            return dg.RunRequest(run_key=f"decisions:{run.run_id}", partition_key=a, tags=tags)
        return dg.RunRequest(run_key=f"decisions:{run.run_id}", tags={**tags, RANGE_START: a, RANGE_END: b})

    return decisions_after_ingest
