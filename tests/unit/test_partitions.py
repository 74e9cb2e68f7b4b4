"""Dagster partitions are exactly the XNYS sessions of the configured range."""

import datetime as dt

import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.defs.partitions import trading_day_partitions


@pytest.mark.parametrize(
    "start,end",
    [("2019-01-02", "2019-03-29"), ("2019-12-20", "2020-01-10"), ("2021-06-28", "2021-07-02"), ("2021-11-22", "2021-11-26")],
)
def test_partition_keys_are_sessions(start, end):
    keys = trading_day_partitions(dt.date.fromisoformat(start), dt.date.fromisoformat(end)).get_partition_keys()
    assert keys == [d.isoformat() for d in nyse().sessions_in_range(start, end)]


def test_a_sessions_partition_exists_when_the_evening_schedule_runs():
    """The 18:30 schedule asks for the day's own partition: it must exist before the next midnight."""
    import datetime as _dt
    import zoneinfo

    from finrag_dagster.defs.partitions import trading_day_partitions

    p = trading_day_partitions(_dt.date(2019, 1, 2), _dt.date(2019, 12, 31))
    evening = _dt.datetime(2019, 2, 7, 18, 30, tzinfo=zoneinfo.ZoneInfo("America/New_York"))
    keys = p.get_partition_keys(current_time=evening)
    assert keys[-1] == "2019-02-07" and "2019-02-08" not in keys
