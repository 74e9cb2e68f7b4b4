"""Freshness policies (docs/production.md): when a session's decision partitions are due.

The daily schedule ingests a session at 18:30 New York (``finrag_daily_schedule``) and
``decisions_after_ingest`` runs its decisions right after. ``stock_day_signals``, every family's
``reader_outputs`` and ``labels`` are due ``[freshness] allowance_min`` minutes after 18:30 on each
weekday, and pass when materialised after that day's close (16:00): Dagster's cron freshness
(``FreshnessPolicy.cron``), seen in the UI's asset pages and its freshness filters. A cron knows
weekdays, not the exchange's holidays: on a holiday these assets show failing freshness until the
next session's run.

A policy judges an asset's latest materialisation, not each session, so the check
``sessions_on_time`` of each of these assets lists the sessions (by the exchange calendar) whose
deadline has passed without their partition: it fails naming exactly those, and passes once they
land. The sensor ``decisions_on_time`` runs the checks whenever that list changes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from functools import lru_cache
from typing import NamedTuple

import dagster as dg
import pandas as pd

from ..core.calendar import nyse, overdue_sessions
from ..core.settings import Settings
from ..sources.replay import replay_now
from .resources import FinragResource

INGEST_AT = dt.time(18, 30)  # the daily schedule's time (defs/sensors.py build_daily_schedule)
CLOSE_AT = dt.time(16, 0)  # the regular close, New York
DUE = ("stock_day_signals", "reader_outputs", "labels")  # by the last part of the asset key


def deadline(s: Settings) -> dt.time:
    """The time of day the decisions of that day's session are due."""
    minutes = INGEST_AT.hour * 60 + INGEST_AT.minute + s.freshness.allowance_min
    return dt.time(minutes // 60, minutes % 60)


def decision_freshness(s: Settings) -> dg.FreshnessPolicy:
    """Due at :func:`deadline` on weekdays, materialised after that day's close."""
    due = deadline(s)
    since_close = dt.datetime.combine(dt.date.min, due) - dt.datetime.combine(dt.date.min, CLOSE_AT)
    return _cron_policy(f"{due.minute} {due.hour} * * 1-5", since_close)


@lru_cache(maxsize=8)
def _cron_policy(cron: str, lower_bound: dt.timedelta) -> dg.FreshnessPolicy:
    """One policy object per cron for every asset that shares it (building one walks the cron's schedule)."""
    return dg.FreshnessPolicy.cron(deadline_cron=cron, lower_bound_delta=lower_bound, timezone="America/New_York")


def freshness_of(key: dg.AssetKey, s: Settings) -> dg.FreshnessPolicy | None:
    """The policy of an asset: the decisions a session is due to produce, when freshness is on."""
    return decision_freshness(s) if s.freshness.enabled and key.path[-1] in DUE else None


CHECK = "sessions_on_time"


def clock(s: Settings) -> pd.Timestamp:
    """Now (UTC): the replay clock of a landing folder being replayed (`finrag replay`), else the wall clock."""
    replayed = replay_now(s)
    return replayed if replayed is not None else pd.Timestamp.now(tz="UTC")


def overdue_by_asset(instance: dg.DagsterInstance, firsts: dict[dg.AssetKey, str], s: Settings, now: pd.Timestamp) -> dict[dg.AssetKey, list[str]]:
    """Each due asset's sessions past their deadline at ``now`` without a materialised partition (Dagster's record)."""
    due = deadline(s)
    return {
        k: overdue_sessions(nyse(), first, now, due, instance.get_materialized_partitions(k), s.freshness.window_sessions)
        for k, first in firsts.items()
    }


class OnTime(NamedTuple):
    checks: dg.AssetChecksDefinition
    sensor: dg.SensorDefinition
    job: dg.UnresolvedAssetJobDefinition


def build_on_time(firsts: dict[dg.AssetKey, str], s: Settings) -> OnTime:
    """The check ``sessions_on_time`` of every due asset (``firsts``: asset key -> its first partition),
    the job that runs them, and the sensor that requests that job when the overdue sessions change."""
    specs = [
        dg.AssetCheckSpec(
            CHECK,
            asset=k,
            description=f"Every session of the last {s.freshness.window_sessions} is materialised by its deadline "
            f"({deadline(s):%H:%M} New York on that day); fails naming the sessions that are not.",
        )
        for k in firsts
    ]

    # can_subset: a run of some of these assets (a sensor's, a UI materialisation) carries their checks alone
    @dg.multi_asset_check(specs=specs, name="decisions_on_time", description="Lists the sessions whose decisions are overdue.", can_subset=True)
    def decisions_on_time(context, finrag: FinragResource):  # an AssetCheckExecutionContext (no annotation: annotations are strings here)
        st = finrag.settings()
        now = clock(st)
        asked = {c.asset_key for c in context.selected_asset_check_keys}
        for k, late in overdue_by_asset(context.instance, {k: f for k, f in firsts.items() if k in asked}, st, now).items():
            yield dg.AssetCheckResult(
                asset_key=k,
                check_name=CHECK,
                passed=not late,
                severity=dg.AssetCheckSeverity.ERROR,
                description=f"overdue: {', '.join(late)}" if late else "every due session is materialised",
                metadata={
                    "overdue": dg.MetadataValue.json(late),
                    "overdue_count": len(late),
                    "checked_at": now.isoformat(),
                    "deadline": f"{deadline(st):%H:%M} America/New_York",
                },
            )

    job = dg.define_asset_job(
        "finrag_freshness", selection=dg.AssetSelection.checks(*(sp.key for sp in specs)), description="Runs the checks sessions_on_time."
    )

    @dg.sensor(
        name="decisions_on_time",
        job=job,
        minimum_interval_seconds=s.freshness.check_interval_s,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description="Runs the sessions_on_time checks whenever the set of overdue sessions changes (a deadline passes, a late session lands).",
    )
    def on_time_sensor(context: dg.SensorEvaluationContext, finrag: FinragResource):
        st = finrag.settings()
        now = clock(st)  # one reading of the clock for the list and the run key
        late = {k.to_user_string(): v for k, v in overdue_by_asset(context.instance, firsts, st, now).items()}
        state = json.dumps(late, sort_keys=True)
        if state == context.cursor:
            n = sum(map(len, late.values()))
            return dg.SkipReason(f"unchanged: {n} overdue session-partitions" if n else "unchanged: nothing overdue")
        context.update_cursor(state)
        # a state seen before (late again after it landed) is a new run: the key holds the tick's time
        return dg.RunRequest(run_key=f"on-time:{hashlib.sha256(state.encode()).hexdigest()[:16]}:{now.isoformat()}")

    return OnTime(decisions_on_time, on_time_sensor, job)
