"""Freshness policies (docs/production.md): when a session's decision partitions are due.

The daily schedule ingests a session at 18:30 New York (``finrag_daily_schedule``) and
``decisions_after_ingest`` runs its decisions right after. ``stock_day_signals``, every family's
``reader_outputs`` and ``labels`` are due ``[freshness] allowance_min`` minutes after 18:30 on each
weekday, and pass when materialised after that day's close (16:00): Dagster's cron freshness
(``FreshnessPolicy.cron``), seen in the UI's asset pages and its freshness filters. A cron knows
weekdays, not the exchange's holidays: on a holiday these assets show failing freshness until the
next session's run.
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache

import dagster as dg

from ..core.settings import Settings

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
