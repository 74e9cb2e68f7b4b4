"""Per-session freshness (docs/production.md, "Freshness"): the check sessions_on_time names exactly
the sessions whose decisions are overdue, on a real Dagster instance, with a replay clock for time."""

from __future__ import annotations

import datetime as dt
import json

import dagster as dg
import pandas as pd

from finrag_dagster.core.settings import Settings
from finrag_dagster.defs.build import build_definitions
from finrag_dagster.defs.freshness import CHECK, DUE
from finrag_dagster.defs.resources import FinragResource
from tests.instance import pooled_instance


def ny(s: str) -> pd.Timestamp:
    return pd.Timestamp(s, tz="America/New_York").tz_convert("UTC")


def _settings(tmp_path) -> Settings:
    landing = tmp_path / "landing"
    (landing / "universe").mkdir(parents=True)
    (landing / "universe" / "tickers.csv").write_text("ticker\nAAA\n")
    (landing / "_replay").mkdir()
    return Settings(
        lake_dir=tmp_path / "lake",
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


def test_a_held_back_session_fails_its_check_until_it_lands(tmp_path):
    s = _settings(tmp_path)
    defs = build_definitions(s, FinragResource.from_settings(s))
    sensor = defs.get_sensor_def("decisions_on_time")
    job = defs.resolve_job_def("finrag_freshness")
    due_keys = [k for k in defs.resolve_asset_graph().get_all_asset_keys() if k.path[-1] in DUE]
    signals = dg.AssetKey("stock_day_signals")
    assert signals in due_keys and dg.AssetKey("labels") in due_keys
    held = "2019-02-05"

    def clock(now: str):
        (tmp_path / "landing" / "_replay" / "clock.json").write_text(json.dumps({"now": ny(now).isoformat(), "last_closed_session": None}))

    def land(keys, days):
        for k in keys:
            for d in days:
                inst.report_runless_asset_event(dg.AssetMaterialization(k, partition=d))

    def tick(cursor):
        return sensor(dg.build_sensor_context(instance=inst, cursor=cursor, resources={"finrag": FinragResource.from_settings(s)}))

    def check():
        res = job.execute_in_process(instance=inst)
        return {e.asset_key: (e.passed, e.metadata["overdue"].value) for e in res.get_asset_check_evaluations() if e.check_name == CHECK}

    with pooled_instance() as inst:
        days = ["2019-02-01", "2019-02-04", "2019-02-05", "2019-02-06", "2019-02-07"]
        land([k for k in due_keys if k != signals], days)
        land([signals], [d for d in days if d != held])
        clock("2019-02-07 21:00")  # Feb 7's decisions were due at 20:30
        first = tick(None)
        assert isinstance(first, dg.RunRequest)
        got = check()
        assert set(got) == set(due_keys)
        assert got[signals] == (False, [held])
        assert all(v == (True, []) for k, v in got.items() if k != signals)
        cursor = json.dumps({k.to_user_string(): ([held] if k == signals else []) for k in due_keys}, sort_keys=True)
        assert isinstance(tick(cursor), dg.SkipReason)  # nothing changed: no new run
        land([signals], [held])
        assert isinstance(tick(cursor), dg.RunRequest)  # it landed: the check runs again
        assert check()[signals] == (True, [])
        clock("2019-02-08 20:29")  # Feb 8 not due yet
        assert check()[signals] == (True, [])
        clock("2019-02-08 20:31")
        assert all(v == (False, ["2019-02-08"]) for v in check().values())


def test_a_run_of_some_due_assets_carries_their_checks_alone(tmp_path):
    """What the matured_feedback sensor launches (labels and feedback) builds: the check op is subset
    to the selected assets' checks, and the daily job runs none of them."""
    s = _settings(tmp_path)
    defs = build_definitions(s, FinragResource.from_settings(s))
    job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection={dg.AssetKey("labels")})
    assert {n.name for n in job.graph.nodes} == {"labels", "decisions_on_time"}
    assert "decisions_on_time" not in {n.name for n in defs.resolve_job_def("finrag_daily").graph.nodes}
