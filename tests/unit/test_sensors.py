"""matured_feedback never asks for a horizon before close(D+h) is in prices; schedule skips holidays."""

import datetime as dt

import dagster as dg
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.settings import Settings
from finrag_dagster.core.storage.lake import Lake
from finrag_dagster.defs.resources import FinragResource
from finrag_dagster.defs.sensors import build_daily_schedule, build_matured_feedback_sensor, matured_decision_days

cal = nyse()
FAMILIES = ("no_memory", "source_memory")


def _lake_with_prices(root, last: str, extra_without_market: str | None = None) -> Lake:
    lake = Lake(root)
    for d in cal.sessions_in_range("2021-03-01", last):
        df = pl.DataFrame(
            {
                "ticker": ["AAA", "QQQ"],
                "open": [None, None],
                "high": [None, None],
                "low": [None, None],
                "close": [None, None],
                "adj_close": [10.0, 300.0],
                "volume": [None, None],
                "source_file": ["f", "f"],
            },
            schema_overrides={"open": pl.Float64, "high": pl.Float64, "low": pl.Float64, "close": pl.Float64, "volume": pl.Int64},
        )
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


def test_decisions_follow_an_ingest_run_over_its_decision_days_only():
    from finrag_dagster.defs.sensors import decision_range

    first, last = "2019-02-01", "2019-06-28"
    assert decision_range({}, "2019-02-05", first, last) == ("2019-02-05", "2019-02-05")
    assert decision_range({}, "2019-01-31", first, last) is None  # a history day: nothing to decide
    tags = {"dagster/asset_partition_range_start": "2019-01-02", "dagster/asset_partition_range_end": "2019-02-06"}
    assert decision_range(tags, None, first, last) == ("2019-02-01", "2019-02-06")
    assert decision_range({}, None, first, last) is None


def test_new_market_data_follows_the_replay_clock_of_a_landing_folder(tmp_path):
    import json

    from finrag_dagster.defs.sensors import build_new_market_data_sensor

    landing = tmp_path / "landing"
    (landing / "universe").mkdir(parents=True)
    (landing / "universe" / "tickers.csv").write_text("ticker\nAAA\n")
    (landing / "_replay").mkdir()
    lake = tmp_path / "lake"
    for d in ("2019-01-30", "2019-01-31"):  # ingested up to Jan 31
        (lake / "evidence" / f"date={d}").mkdir(parents=True)
        (lake / "evidence" / f"date={d}" / "part-0.parquet").write_bytes(b"")
    s = Settings(
        lake_dir=lake,
        sources={
            "kind": "files",
            "universe": str(landing / "universe" / "tickers.csv"),
            "news": [],
            "prices": [],
            "filings_index": [],
            "filings_text": [],
        },
        calendar={"start": dt.date(2018, 1, 2), "end": dt.date(2019, 6, 28), "decision_start": dt.date(2019, 2, 1)},
    )
    job = dg.define_asset_job("j", selection=dg.AssetSelection.all())
    sensor = build_new_market_data_sensor(job, interval_s=10)

    def tick(now: str, cursor=None):
        (landing / "_replay" / "clock.json").write_text(json.dumps({"now": now, "last_closed_session": None}))
        return sensor(dg.build_sensor_context(cursor=cursor, resources={"finrag": FinragResource.from_settings(s)}))

    # replay clock before the close of Feb 5 (a Tuesday): Feb 1 and Feb 4 are complete, not Feb 5
    req = tick("2019-02-05T20:00:00+00:00")
    assert isinstance(req, dg.RunRequest)
    assert (req.tags["dagster/asset_partition_range_start"], req.tags["dagster/asset_partition_range_end"]) == ("2019-02-01", "2019-02-04")
    # before the first close after the lake's last day: nothing to do
    assert isinstance(tick("2019-02-01T20:59:00+00:00", cursor="other"), dg.SkipReason)
