"""Trading-day partitions: one partition per XNYS session (weekday cron minus holidays)."""

from __future__ import annotations

import datetime as dt

import dagster as dg
import pandas as pd

from ..core.calendar import nyse

# The run tags with which Dagster marks a single run over a range of partitions (a backfill's run)
RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"


def trading_day_partitions(start: dt.date, end: dt.date) -> dg.TimeWindowPartitionsDefinition:
    """Partitions keyed YYYY-MM-DD for every XNYS session in [start, end]."""
    cal = nyse()
    stop = cal.next_session(end)
    sessions = set(cal.sessions_in_range(start, stop))
    exclusions = [d.to_pydatetime() for d in pd.bdate_range(start, stop) if d.date() not in sessions]
    return dg.TimeWindowPartitionsDefinition(
        start=start.isoformat(),
        # a session's window closes at the next weekday's midnight, so end at the next session
        end=stop.isoformat(),
        fmt="%Y-%m-%d",
        cron_schedule="0 0 * * 1-5",
        timezone="America/New_York",
        exclusions=exclusions,
        # a session's partition exists from the start of that day (not from the next midnight), so
        # the 18:30 schedule can run the day it is for; sensors only request completed sessions
        end_offset=1,
    )
