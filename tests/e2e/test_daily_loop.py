"""The daily loop, seen running as a user runs it: `finrag dev` (webserver and daemon) over a landing
folder that `finrag replay` fills session by session, the sensors `new_market_data` and
`matured_feedback` turned on through GraphQL as the UI does, and the schedule's run for a session
launched the way the UI's "test schedule" dialog launches it.

Asserted from the instance and the lake:
* every released session gets its decision partitions (anchors, candidates, every family's reader
  outputs, stock-day signals), each only after that session's close was released;
* no label or feedback of decision day D horizon h is requested before close(D+h) was released
  (run creation times against the replay's release log), and no matured label in the lake is ever
  ahead of the replay clock;
* the decision tables written day by day equal, to the byte, a single in-process run over the
  final landing folder, so the memory of day D used only feedback matured by D-1 (the in-process
  run is the one the time-travel test holds to that).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import httpx
import pandas as pd
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.tables import Lake
from finrag_dagster.pipeline import run_range
from finrag_dagster.sources.news import NewsClock
from finrag_dagster.sources.replay import Replayer, start_of
from tests.instance import instance_yaml, pooled_instance
from tests.pipeline.world import DECISION_START, build_world, short_settings

pytestmark = [pytest.mark.slow]
CAL = nyse()
SENSOR_DAYS = [d.isoformat() for d in CAL.sessions_in_range(DECISION_START, dt.date(2019, 2, 4))]  # 2 sessions via the sensors
SCHEDULE_DAY = CAL.next_session(SENSOR_DAYS[-1]).isoformat()  # then one via the schedule
FAMILIES = ("no_memory", "source_memory")
HISTORY = ["universe", "prices", "news_raw", "filings_raw", "returns", "evidence"]
COMPARED = [
    "prices",
    "news_raw",
    "filings_raw",
    "returns",
    "evidence",
    "anchors",
    "context_cards",
    "candidates",
    "contexts",
    "reader_outputs",
    "memory_snapshot",
    "stock_day_signals",
]
LOC = {"repositoryLocationName": "finrag", "repositoryName": "__repository__"}
ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UI:
    def __init__(self, port: int, log: Path):
        self.port, self.log = port, log

    def gql(self, query: str, variables: dict | None = None) -> dict:
        r = httpx.post(f"http://127.0.0.1:{self.port}/graphql", json={"query": query, "variables": variables or {}}, timeout=120)
        r.raise_for_status()
        body = r.json()
        assert "errors" not in body, body["errors"]
        return body["data"]

    def runs(self) -> list[dict]:
        q = "{ runsOrError(limit: 500) { ... on Runs { results { runId jobName status creationTime tags { key value } } } } }"
        return self.gql(q)["runsOrError"]["results"]

    def fail_on_failed_runs(self) -> None:
        bad = [r for r in self.runs() if r["status"] in ("FAILURE", "CANCELED")]
        if bad:
            ev = self.gql(
                '{ logsForRun(runId: "%s") { ... on EventConnection { events { __typename ... on MessageEvent { message } } } } }' % bad[0]["runId"]
            )
            msgs = [e.get("message", "") for e in ev["logsForRun"]["events"]][-15:]
            pytest.fail(f"run {bad[0]['jobName']} failed: {msgs}\n{self.log.read_text()[-3000:]}")


def _tags(run: dict) -> dict:
    return {t["key"]: t["value"] for t in run["tags"]}


def _released_close(landing: Path) -> dict[str, float]:
    """Session -> wall time its market-proxy bar was released (from the replay's release log)."""
    out = {}
    for line in (landing / "_replay" / "releases.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["kind"] == "prices" and r["key"].startswith("QQQ:"):
            out[r["key"].split(":", 1)[1]] = (
                float(r["released_at_wall_time"])
                if not isinstance(r["released_at_wall_time"], str)
                else pd.Timestamp(r["released_at_wall_time"]).timestamp()
            )
    return out


def _decided(lake: Lake, day: str) -> bool:
    return all(lake.exists("reader_outputs", variant=f, date=day) for f in FAMILIES) and lake.exists("stock_day_signals", date=day)


def _wait(ui: UI, what, cond, seconds: float = 600) -> None:
    t0 = time.time()
    while not cond():
        ui.fail_on_failed_runs()
        if time.time() - t0 > seconds:
            pytest.fail(f"timed out waiting for {what}; runs: {[(r['jobName'], r['status']) for r in ui.runs()][:20]}\n{ui.log.read_text()[-3000:]}")
        time.sleep(3)


def _stop_sensor(ui: UI, name: str, quiet_s: float = 12, seconds: float = 120) -> None:
    """Stop a sensor as the UI's toggle does, then wait until it has settled: the last tick ended and
    no new one appeared for `quiet_s` (more than the sensor's 5 s interval). The daemon reads sensor
    states at the start of an iteration, so a tick begun before the stop may still start and
    evaluate, and a tick that was running can store its sensor's RUNNING state back over the stop:
    seen as new ticks every 5 s, the sensor is stopped again, as a user would click again."""
    q = (
        '{ sensorOrError(sensorSelector: {repositoryLocationName: "finrag", repositoryName: "__repository__", '
        f'sensorName: "{name}"}}) {{ ... on Sensor {{ sensorState {{ id selectorId status ticks(limit: 1) {{ id status }} }} }} }} }}'
    )
    stop = "mutation($id: String!, $sid: String!) { stopSensor(id: $id, jobSelectorId: $sid) { __typename ... on PythonError { message } } }"
    t0 = last_change = time.time()
    last, stops = None, 0
    while True:
        state = ui.gql(q)["sensorOrError"]["sensorState"]
        if state["status"] == "RUNNING":
            res = ui.gql(stop, {"id": state["id"], "sid": state["selectorId"]})["stopSensor"]
            assert res["__typename"] != "PythonError", res
            stops, last_change = stops + 1, time.time()
        ticks = state["ticks"]
        now = (ticks[0]["id"], ticks[0]["status"]) if ticks else None
        if now != last:
            last, last_change = now, time.time()
        if (now is None or now[1] != "STARTED") and time.time() - last_change >= quiet_s:
            return
        assert time.time() - t0 < seconds, f"sensor {name} still ticking {seconds} s after its stop ({stops} stop requests): {now}"
        time.sleep(1)


def _no_label_ahead_of_the_clock(lake: Lake, last_closed: str) -> None:
    if not (lake.root / "labels").exists():
        return
    con = lake.duckdb(tables=["labels"])
    n = con.execute("SELECT count(*) FROM labels WHERE status = 'ok' AND maturity_day > CAST($d AS DATE)", {"d": last_closed}).fetchone()[0]
    con.close()
    assert n == 0, f"{n} matured labels in the lake mature after the last released close {last_closed}"


def _files(root: Path, days: list[str]) -> dict[str, bytes]:
    out = {}
    for t in COMPARED:
        for f in sorted((root / t).rglob("part-0.parquet")):
            rel = f.relative_to(root).as_posix()
            if any(f"date={d}" in rel for d in days):
                out[rel] = f.read_bytes()
    return out


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    root = tmp_path_factory.mktemp("daily")
    raw = build_world(root)
    landing = root / "landing"
    rep = Replayer(raw, landing, news_clock=NewsClock(dates_only=False))  # as files_settings reads it
    rep.release_until(start_of(DECISION_START))  # the history, as if the loop had run until then
    # the runs the daemon launches execute their steps in their run's process: what is under test is
    # when the sensors and the schedule request which partitions (the UI test runs a backfill under
    # the multiprocess executor)
    settings = short_settings(
        landing,
        root / "lake",
        variants={"families": FAMILIES},
        sensors={"new_market_data_interval_s": 5, "matured_feedback_interval_s": 5, "decisions_after_ingest_interval_s": 5},
        freshness={"check_interval_s": 5},
        execution={"job_executor": "in_process"},
    )
    home = root / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(home))
    cfg = root / "settings.json"
    cfg.write_text(settings.model_dump_json())
    before = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        with dg.DagsterInstance.get() as inst:
            run_range(settings, end=CAL.previous_session(DECISION_START), instance=inst, only=HISTORY)
    finally:  # the worker's own DAGSTER_HOME back: later tests on this worker read the shipped instance
        if before is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = before
    shutil.copytree(root / "lake", root / "before")  # for the in-process reference at the end
    port = _port()
    log = root / "dev.log"
    env = {**os.environ, "DAGSTER_HOME": str(home), "FINRAG_CONFIG": str(cfg)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "finrag_dagster.cli", "dev", "--port", str(port)],
        env=env,
        cwd=root,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    ui = UI(port, log)
    deadline = time.time() + 240
    while True:
        try:
            if ui.gql("{ version }"):
                break
        except (httpx.HTTPError, KeyError, TypeError):
            pass
        assert proc.poll() is None and time.time() < deadline, log.read_text()[-3000:]
        time.sleep(1)
    yield ui, rep, landing, settings, root
    ps = subprocess.run(["ps", "-eo", "pgid=,args="], capture_output=True, text=True).stdout.splitlines()
    groups = {int(line.split(None, 1)[0]) for line in ps if "dagster dev" in line and f"-p {port}" in line}
    proc.send_signal(signal.SIGTERM)  # finrag dev stops dagster dev's whole process group
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    for g in groups:  # whatever happened, no server is left behind
        try:
            os.killpg(g, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_the_daily_loop_runs_from_sensors_and_the_schedule(loop):
    ui, rep, landing, settings, root = loop
    lake = Lake(settings.lake_dir)
    for name in ("new_market_data", "matured_feedback"):
        res = ui.gql(
            "mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) { __typename ... on Sensor { sensorState { status } } ... on PythonError { message } } }",
            {"s": {**LOC, "sensorName": name}},
        )["startSensor"]
        assert res["__typename"] == "Sensor" and res["sensorState"]["status"] == "RUNNING", res
    decided_at = {}
    for day in SENSOR_DAYS:
        assert not lake.exists("anchors", date=day)  # nothing of the session before its close is released
        rep.release_until(CAL.close_time(day) + pd.Timedelta(minutes=5))
        _wait(ui, f"the decisions of {day}", lambda: _decided(lake, day))
        decided_at[day] = time.time()
        _no_label_ahead_of_the_clock(lake, day)

    # the schedule's run for the next session, launched as the UI's "test schedule" dialog does
    _stop_sensor(ui, "new_market_data")
    rep.release_until(CAL.close_time(SCHEDULE_DAY) + pd.Timedelta(minutes=5))
    ts = pd.Timestamp(f"{SCHEDULE_DAY} 18:30", tz="America/New_York").timestamp()
    dry = ui.gql(
        "mutation($s: ScheduleSelector!, $t: Float) { scheduleDryRun(selectorData: $s, timestamp: $t) { __typename "
        "... on DryRunInstigationTick { evaluationResult { runRequests { runKey jobName tags { key value } } skipReason error { message } } } "
        "... on PythonError { message } } }",
        {"s": {**LOC, "scheduleName": "finrag_daily_schedule"}, "t": ts},
    )["scheduleDryRun"]
    reqs = dry["evaluationResult"]["runRequests"]
    assert len(reqs) == 1, dry
    tags = {t["key"]: t["value"] for t in reqs[0]["tags"]}
    assert tags.get("dagster/partition") == SCHEDULE_DAY, tags
    launched = ui.gql(
        "mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename ... on LaunchRunSuccess { run { runId } } "
        "... on PythonError { message } } }",
        {
            "p": {
                "selector": {**LOC, "jobName": "finrag_ingest"},
                "runConfigData": {},
                "executionMetadata": {"tags": [{"key": k, "value": v} for k, v in tags.items()]},
            }
        },
    )["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    _wait(ui, f"the scheduled session {SCHEDULE_DAY}", lambda: _decided(lake, SCHEDULE_DAY))
    decided_at[SCHEDULE_DAY] = time.time()
    days = [*SENSOR_DAYS, SCHEDULE_DAY]

    # the sensors again, and one more close: its ingest lets matured_feedback see the new close
    res = ui.gql("mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) { __typename } }", {"s": {**LOC, "sensorName": "new_market_data"}})
    assert res["startSensor"]["__typename"] == "Sensor", res
    nxt = CAL.next_session(SCHEDULE_DAY).isoformat()
    rep.release_until(CAL.close_time(nxt) + pd.Timedelta(minutes=5))
    _wait(ui, f"the decisions of {nxt}", lambda: _decided(lake, nxt))
    _wait(
        ui,
        "matured feedback of the last closes",
        lambda: any(_tags(r).get("finrag/market_day") == nxt and r["status"] == "SUCCESS" for r in ui.runs()),
        300,
    )
    _wait(ui, "every run to end", lambda: all(r["status"] in ("SUCCESS", "FAILURE", "CANCELED") for r in ui.runs()), 300)
    ui.fail_on_failed_runs()
    _no_label_ahead_of_the_clock(lake, nxt)

    released = _released_close(landing)
    runs = ui.runs()
    by_job = {}
    for r in runs:
        by_job.setdefault(r["jobName"], []).append(r)
    assert {"finrag_ingest", "finrag_daily"} <= set(by_job), set(by_job)
    for r in runs:
        t = _tags(r)
        if "finrag/matured_horizons" in t:  # a matured_feedback run: never before close(D+h) was released
            for h in t["finrag/matured_horizons"].split(","):
                m = CAL.offset(t["dagster/partition"], int(h[:-1])).isoformat()
                assert m in released and r["creationTime"] >= released[m], (t, m)
        if r["jobName"] == "finrag_daily":  # a decision run: after its sessions' closes were released
            a, b = (
                (t["dagster/partition"],) * 2
                if "dagster/partition" in t
                else (t["dagster/asset_partition_range_start"], t["dagster/asset_partition_range_end"])
            )
            assert all(released.get(d.isoformat(), float("inf")) <= r["creationTime"] for d in CAL.sessions_in_range(a, b))
    assert any("finrag/matured_horizons" in _tags(r) for r in runs)

    # the same bytes as one in-process run over the final landing folder
    ref = settings.model_copy(update={"lake_dir": root / "reference"})
    shutil.copytree(root / "before", root / "reference")
    with pooled_instance() as inst:
        run_range(
            ref,
            end=dt.date.fromisoformat(SCHEDULE_DAY),
            decision_start=DECISION_START,
            history_start=DECISION_START,
            instance=inst,
            only=[
                *HISTORY,
                "anchors",
                "context_cards",
                "candidates",
                "labels",
                "experience_tree",
                *[f"{f}/{t}" for f in FAMILIES for t in ("contexts", "reader_outputs")],
                "source_memory/memory_snapshot",
                "stock_day_signals",
            ],
        )
    got, want = _files(Path(settings.lake_dir), days), _files(root / "reference", days)
    assert want and sorted(got) == sorted(want)
    assert [k for k in want if got[k] != want[k]] == []

    # what a person sees: the runs and the sensor ticks
    chromium = shutil.which("chromium")
    if chromium:
        for page, name in (("runs", "ui_daily_runs.png"), ("overview/automation", "ui_sensors.png")):
            shot = root / name
            subprocess.run(
                [
                    chromium,
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-quic",
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    f"--user-data-dir={root / 'profile'}",
                    "--window-size=1600,1000",
                    "--virtual-time-budget=20000",
                    f"--screenshot={shot}",
                    f"http://127.0.0.1:{ui.port}/{page}",
                ],
                capture_output=True,
                timeout=180,
            )
            if os.environ.get("FINRAG_UPDATE_SCREENSHOT") and shot.exists():
                shutil.copy(shot, DOCS / name)

    # finrag status reads it back
    r = subprocess.run(
        [sys.executable, "-m", "finrag_dagster.cli", "status", "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "FINRAG_CONFIG": str(root / "settings.json"), "DAGSTER_HOME": str(root / "home")},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    st = json.loads(r.stdout)
    assert st["last_market_day"] == nxt and st["last_decision_day"]["source_memory/reader_outputs"] >= SCHEDULE_DAY
    assert {s["name"] for s in st["sensors"]} >= {"new_market_data", "matured_feedback"}

    # a session held back: its close released but not ingested (new_market_data stopped), and the
    # replay clock past its deadline; the daemon's decisions_on_time runs the checks, which name it
    _stop_sensor(ui, "new_market_data")
    late = CAL.next_session(nxt).isoformat()
    rep.release_until(pd.Timestamp(f"{late} 21:00", tz="America/New_York"))
    res = ui.gql(
        "mutation($s: SensorSelector!) { startSensor(sensorSelector: $s) { __typename } }", {"s": {**LOC, "sensorName": "decisions_on_time"}}
    )
    assert res["startSensor"]["__typename"] == "Sensor", res
    _wait(ui, "the freshness checks", lambda: any(r["jobName"] == "finrag_freshness" and r["status"] == "SUCCESS" for r in ui.runs()), 180)
    q = (
        '{ assetCheckExecutions(assetKey: {path: ["stock_day_signals"]}, checkName: "sessions_on_time", limit: 1) '
        "{ status evaluation { success description metadataEntries { label ... on JsonMetadataEntry { jsonString } } } } }"
    )
    (ex,) = ui.gql(q)["assetCheckExecutions"]
    overdue = {m["label"]: m.get("jsonString") for m in ex["evaluation"]["metadataEntries"]}["overdue"]
    assert ex["status"] == "FAILED" and not ex["evaluation"]["success"] and json.loads(overdue) == [late], ex
    chromium = shutil.which("chromium")
    if chromium and os.environ.get("FINRAG_UPDATE_SCREENSHOT"):  # the failed check as the UI shows it
        shot = root / "ui_sessions_on_time.png"
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={root / 'profile2'}"]
        args += ["--window-size=1600,1000", "--virtual-time-budget=20000", f"--screenshot={shot}"]
        subprocess.run(
            [chromium, *args, f"http://127.0.0.1:{ui.port}/assets/stock_day_signals?view=checks&checkDetail=sessions_on_time"],
            capture_output=True,
            timeout=180,
        )
        if shot.exists():
            shutil.copy(shot, DOCS / shot.name)
