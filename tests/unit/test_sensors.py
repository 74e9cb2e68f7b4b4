"""matured_feedback never asks for a horizon before close(D+h) is in prices; schedule skips holidays."""

import datetime as dt

import dagster as dg
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.lake import Lake
from finrag_dagster.core.settings import Settings
from finrag_dagster.defs.resources import FinragResource
from finrag_dagster.defs.sensors import build_daily_schedule, build_matured_feedback_sensor, matured_decision_days

cal = nyse()
FAMILIES = ("no_memory", "source_memory")


def _lake_with_prices(root, last: str, extra_without_market: str | None = None) -> Lake:
    lake = Lake(root)
    for d in cal.sessions_in_range("2021-03-01", last):
        df = pl.DataFrame({"ticker": ["AAA", "QQQ"], "open": [None, None], "high": [None, None], "low": [None, None], "close": [None, None],
                           "adj_close": [10.0, 300.0], "volume": [None, None], "source_file": ["f", "f"]},
                          schema_overrides={"open": pl.Float64, "high": pl.Float64, "low": pl.Float64, "close": pl.Float64, "volume": pl.Int64})
        lake.write("prices", df, date=d)
    if extra_without_market:  # a partition that exists but has no market bar yet (e.g. an empty future day)
        lake.write("prices", df.filter(pl.col("ticker") == "AAA"), date=extra_without_market)
    return lake


def _evaluate(lake, cursor):
    s = Settings(lake_dir=lake.root, calendar={"start": dt.date(2021, 3, 1), "end": dt.date(2021, 6, 30), "decision_start": dt.date(2021, 3, 1)})
    sensor = build_matured_feedback_sensor(FAMILIES)
    ctx = dg.build_sensor_context(cursor=cursor, resources={"finrag": FinragResource.from_settings(s)})
    return sensor(ctx)


def test_only_horizons_that_matured_are_requested(tmp_path):
    lake = _lake_with_prices(tmp_path, "2021-03-15", extra_without_market="2021-03-16")
    res = _evaluate(lake, cursor="2021-03-11")  # closes of 03-12 and 03-15 are new
    got = {r.partition_key: r.tags["finrag/matured_horizons"] for r in res.run_requests}
    # 03-12 matures 1D of 03-11, 3D of 03-09, 5D of 03-05; 03-15 matures 1D of 03-12, 3D of 03-10, 5D of 03-08
    assert got == {"2021-03-11": "1D", "2021-03-09": "3D", "2021-03-05": "5D", "2021-03-12": "1D", "2021-03-10": "3D", "2021-03-08": "5D"}
    assert res.cursor == "2021-03-15"  # the day without a market bar does not count as a close
    keys = {k.to_user_string() for k in res.run_requests[0].asset_selection}
    assert keys == {"labels", "no_memory/feedback", "source_memory/feedback"}
    for r in res.run_requests:  # never earlier: every requested horizon's close is in prices
        for h in r.tags["finrag/matured_horizons"].split(","):
            assert cal.offset(r.partition_key, int(h[0])).isoformat() <= "2021-03-15"


def test_nothing_new_means_no_request(tmp_path):
    lake = _lake_with_prices(tmp_path, "2021-03-15")
    res = _evaluate(lake, cursor="2021-03-15")
    assert not res.run_requests and "no new closes" in res.skip_reason.skip_message


def test_matured_days_respect_the_first_decision_day():
    assert matured_decision_days(["2021-03-03"], "2021-03-01") == {"2021-03-02": ["1D"]}


def test_schedule_skips_holidays_and_runs_sessions():
    job = dg.define_asset_job("j", selection=dg.AssetSelection.all())
    sched = build_daily_schedule(job)
    import zoneinfo

    ny = zoneinfo.ZoneInfo("America/New_York")
    holiday = sched(dg.build_schedule_context(scheduled_execution_time=dt.datetime(2021, 7, 5, 18, 30, tzinfo=ny)))
    assert isinstance(holiday, dg.SkipReason)
    run = sched(dg.build_schedule_context(scheduled_execution_time=dt.datetime(2021, 7, 6, 18, 30, tzinfo=ny)))
    assert run.partition_key == "2021-07-06"
