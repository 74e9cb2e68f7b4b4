"""matured_feedback never asks for a horizon before close(D+h) is in prices; schedule skips holidays;
the schedule and new_market_data never ingest a day the other one has ingested or is ingesting."""

import datetime as dt

import dagster as dg
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.settings import Settings
from finrag_dagster.core.tables import Lake
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


def test_schedule_skips_holidays_and_runs_sessions(tmp_path):
    job = dg.define_asset_job("j", selection=dg.AssetSelection.all())
    sched = build_daily_schedule(job)
    import zoneinfo

    ny = zoneinfo.ZoneInfo("America/New_York")
    res = {"finrag": FinragResource.from_settings(Settings(lake_dir=tmp_path))}
    with dg.instance_for_test() as instance:
        holiday = sched(
            dg.build_schedule_context(instance=instance, resources=res, scheduled_execution_time=dt.datetime(2021, 7, 5, 18, 30, tzinfo=ny))
        )
        assert isinstance(holiday, dg.SkipReason)
        run = sched(dg.build_schedule_context(instance=instance, resources=res, scheduled_execution_time=dt.datetime(2021, 7, 6, 18, 30, tzinfo=ny)))
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
        with dg.instance_for_test() as instance:
            return sensor(dg.build_sensor_context(instance=instance, cursor=cursor, resources={"finrag": FinragResource.from_settings(s)}))

    # replay clock before the close of Feb 5 (a Tuesday): Feb 1 and Feb 4 are complete, not Feb 5
    req = tick("2019-02-05T20:00:00+00:00")
    assert isinstance(req, dg.RunRequest)
    assert (req.tags["dagster/asset_partition_range_start"], req.tags["dagster/asset_partition_range_end"]) == ("2019-02-01", "2019-02-04")
    # before the first close after the lake's last day: nothing to do
    assert isinstance(tick("2019-02-01T20:59:00+00:00", cursor="other"), dg.SkipReason)


# --- the schedule and new_market_data both on: whichever comes second leaves the day alone ---------

INGEST = "finrag_ingest"


def _chain(tmp_path, evidence_days=("2019-01-30", "2019-01-31")):
    """A files-source settings whose landing folder replays, a lake with ``evidence`` for
    ``evidence_days``, and the schedule and new_market_data sensor over an ingest job."""
    from finrag_dagster.defs.sensors import build_new_market_data_sensor

    landing = tmp_path / "landing"
    (landing / "universe").mkdir(parents=True)
    (landing / "universe" / "tickers.csv").write_text("ticker\nAAA\n")
    (landing / "_replay").mkdir()
    lake = tmp_path / "lake"
    for d in evidence_days:
        _materialise_evidence(lake, d)
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
    job = dg.define_asset_job(INGEST, selection=dg.AssetSelection.all())
    return s, landing, build_daily_schedule(job), build_new_market_data_sensor(job, interval_s=10)


def _materialise_evidence(lake, day):
    (lake / "evidence" / f"date={day}").mkdir(parents=True, exist_ok=True)
    (lake / "evidence" / f"date={day}" / "part-0.parquet").write_bytes(b"")


def _at_1830(sched, instance, s, day: str):
    import zoneinfo

    when = dt.datetime.fromisoformat(f"{day}T18:30").replace(tzinfo=zoneinfo.ZoneInfo("America/New_York"))
    ctx = dg.build_schedule_context(instance=instance, resources={"finrag": FinragResource.from_settings(s)}, scheduled_execution_time=when)
    return sched(ctx)


def _sensor_tick(sensor, instance, s, landing, now: str, cursor=None):
    import json

    (landing / "_replay" / "clock.json").write_text(json.dumps({"now": now, "last_closed_session": None}))
    ctx = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"finrag": FinragResource.from_settings(s)})
    return sensor(ctx), ctx


def _ingest_run(instance, status=dg.DagsterRunStatus.STARTED, **tags):
    from dagster._core.remote_origin import GrpcServerCodeLocationOrigin, RemoteRepositoryOrigin
    from dagster._core.test_utils import create_run_for_test

    # a queued run must say where its code is (the queue launches it from there)
    origin = RemoteRepositoryOrigin(
        GrpcServerCodeLocationOrigin(host="localhost", port=4266, location_name="finrag"), "__repository__"
    ).get_job_origin(INGEST)
    return create_run_for_test(instance, job_name=INGEST, status=status, tags=tags, remote_job_origin=origin)


def _range(a, b):
    from finrag_dagster.defs.partitions import RANGE_END, RANGE_START

    return {RANGE_START: a, RANGE_END: b}


def test_schedule_skips_a_day_an_in_flight_sensor_run_covers(tmp_path):
    s, _, sched, _ = _chain(tmp_path)
    with dg.instance_for_test() as instance:
        run = _ingest_run(instance, **_range("2019-02-01", "2019-02-04"))  # new_market_data's range run, going
        _ingest_run(instance, status=dg.DagsterRunStatus.FAILURE, **_range("2019-02-05", "2019-02-05"))  # finished: covers nothing
        skip = _at_1830(sched, instance, s, "2019-02-04")
        assert isinstance(skip, dg.SkipReason) and skip.skip_message == f"2019-02-04 is being ingested by run {run.run_id[:8]}"
        # a day no run covers and not in the lake still runs
        req = _at_1830(sched, instance, s, "2019-02-05")
        assert isinstance(req, dg.RunRequest) and req.partition_key == "2019-02-05"
        # a queued run of the day counts too, in a partition run as in a range run
        _ingest_run(instance, status=dg.DagsterRunStatus.QUEUED, **{"dagster/partition": "2019-02-05"})
        assert isinstance(_at_1830(sched, instance, s, "2019-02-05"), dg.SkipReason)


def test_schedule_skips_a_day_already_ingested(tmp_path):
    s, _, sched, _ = _chain(tmp_path, evidence_days=("2019-01-31", "2019-02-01", "2019-02-04"))  # the sensor's run finished
    with dg.instance_for_test() as instance:
        skip = _at_1830(sched, instance, s, "2019-02-04")
        assert isinstance(skip, dg.SkipReason) and skip.skip_message == "2019-02-04 is already ingested (evidence materialised)"
        req = _at_1830(sched, instance, s, "2019-02-05")
        assert isinstance(req, dg.RunRequest) and req.partition_key == "2019-02-05"


def test_new_market_data_leaves_out_the_days_an_in_flight_run_covers(tmp_path):
    s, landing, _, sensor = _chain(tmp_path)  # ingested up to Jan 31
    after_feb5_close = "2019-02-05T22:00:00+00:00"  # Feb 1, 4 and 5 are complete

    def span(r):
        return r.tags["dagster/asset_partition_range_start"], r.tags["dagster/asset_partition_range_end"]

    with dg.instance_for_test() as instance:
        req, ctx = _sensor_tick(sensor, instance, s, landing, after_feb5_close, cursor="old")
        assert span(req) == ("2019-02-01", "2019-02-05")
        assert ctx.cursor != "old"  # nothing left to another run: the new fingerprint is the cursor
        _ingest_run(instance, **{"dagster/partition": "2019-02-05"})  # the schedule's run of Feb 5, going
        req, ctx = _sensor_tick(sensor, instance, s, landing, after_feb5_close, cursor="old")
        assert span(req) == ("2019-02-01", "2019-02-04")
        assert ctx.cursor == "old"  # Feb 5 was left to that run: look again next tick
        _ingest_run(instance, status=dg.DagsterRunStatus.NOT_STARTED, **_range("2019-02-01", "2019-02-04"))  # that request, launched
        skip, ctx = _sensor_tick(sensor, instance, s, landing, after_feb5_close, cursor="old")
        assert isinstance(skip, dg.SkipReason) and "are being ingested by run(s)" in skip.skip_message and ctx.cursor == "old"
    with dg.instance_for_test() as instance:  # a run in the middle of the range splits it in two
        _ingest_run(instance, status=dg.DagsterRunStatus.STARTING, **{"dagster/partition": "2019-02-04"})
        reqs, _ = _sensor_tick(sensor, instance, s, landing, after_feb5_close)
        assert [span(r) for r in reqs] == [("2019-02-01", "2019-02-01"), ("2019-02-05", "2019-02-05")]
        assert len({r.run_key for r in reqs}) == 2


def test_new_market_data_skips_when_the_schedule_run_covers_its_only_day_and_retries_if_it_fails(tmp_path):
    s, landing, _, sensor = _chain(tmp_path, evidence_days=("2019-01-31", "2019-02-01", "2019-02-04"))
    after_feb5_close = "2019-02-05T22:00:00+00:00"
    with dg.instance_for_test() as instance:
        scheduled = _ingest_run(instance, **{"dagster/partition": "2019-02-05"})
        skip, ctx = _sensor_tick(sensor, instance, s, landing, after_feb5_close, cursor="old")
        assert isinstance(skip, dg.SkipReason) and skip.skip_message == f"2019-02-05..2019-02-05 are being ingested by run(s) {scheduled.run_id[:8]}"
        assert ctx.cursor == "old"  # the fingerprint is not taken: Feb 5 is not ingested yet
        instance.report_run_failed(scheduled)
        req, ctx = _sensor_tick(sensor, instance, s, landing, after_feb5_close, cursor="old")  # same files, next tick
        assert isinstance(req, dg.RunRequest)
        assert (req.tags["dagster/asset_partition_range_start"], req.tags["dagster/asset_partition_range_end"]) == ("2019-02-05", "2019-02-05")
        assert ctx.cursor != "old"


def test_new_market_data_refills_a_day_whose_run_failed_before_a_later_day_succeeded(tmp_path):
    """The schedule's run of Feb 4 failed, Feb 5's succeeded: when the files change, the sensor
    requests Feb 4 again (alone: Feb 5 is in the lake) with the new days after Feb 5."""
    s, landing, _, sensor = _chain(tmp_path, evidence_days=("2019-01-31", "2019-02-01", "2019-02-05"))
    after_feb7_close = "2019-02-07T22:00:00+00:00"
    with dg.instance_for_test() as instance:
        _ingest_run(instance, status=dg.DagsterRunStatus.FAILURE, **{"dagster/partition": "2019-02-04"})
        reqs, ctx = _sensor_tick(sensor, instance, s, landing, after_feb7_close, cursor="old")
        reqs = reqs if isinstance(reqs, list) else [reqs]
        spans = [(r.tags["dagster/asset_partition_range_start"], r.tags["dagster/asset_partition_range_end"]) for r in reqs]
        assert spans == [("2019-02-04", "2019-02-04"), ("2019-02-06", "2019-02-07")]
        assert ctx.cursor != "old"
    with dg.instance_for_test() as instance:  # all filled: nothing to request
        for d in ("2019-02-04", "2019-02-06", "2019-02-07"):
            _materialise_evidence(s.lake_dir, d)
        skip, _ = _sensor_tick(sensor, instance, s, landing, after_feb7_close, cursor="old")
        assert isinstance(skip, dg.SkipReason) and skip.skip_message == "every completed session is materialised"
