"""Trading-day partitions: one partition per XNYS session (weekday cron minus holidays)."""

from __future__ import annotations

import datetime as dt

import dagster as dg
import pandas as pd

from ..core.calendar import nyse


def trading_day_partitions(start: dt.date, end: dt.date) -> dg.TimeWindowPartitionsDefinition:
    """Partitions keyed YYYY-MM-DD for every XNYS session in [start, end]."""
    cal = nyse()
    sessions = set(cal.sessions_in_range(start, end))
    exclusions = [d.to_pydatetime() for d in pd.bdate_range(start, end) if d.date() not in sessions]
    return dg.TimeWindowPartitionsDefinition(
        start=start.isoformat(),
        end=(end + dt.timedelta(days=1)).isoformat(),
        fmt="%Y-%m-%d",
        cron_schedule="0 0 * * 1-5",
        timezone="America/New_York",
        exclusions=exclusions,
    )
