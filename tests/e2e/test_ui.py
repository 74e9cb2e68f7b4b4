"""The Dagster UI, checked as a person would: `dagster dev` (webserver and daemon) on 127.0.0.1
over a small lake, opened in headless Chromium (Debian's package); the first-visit pop-up is
dismissed through the GraphQL `setNuxSeen` mutation. Asserts that the asset graph names the
pipeline's assets, that the Lineage page draws (no "Cycle detected"), that a backfill of the
decision and loop assets launched as the UI launches it (``launchPartitionBackfill``) is run by the
daemon to success and writes the same lake bytes as the in-process `finrag demo` path, and keeps
screenshots for the docs."""

import datetime as dt
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import dagster as dg
import httpx
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.defs.pools import EMBEDDING_POOL
from finrag_dagster.pipeline import run_range
from tests.instance import instance_yaml, pooled_instance
from tests.pipeline.world import DECISION_START, SHORT_HISTORY_START, WORLD, build_world, short_settings

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is installed by .ci/run")]
END = dt.date(2019, 2, 8)
DOCS = Path(__file__).resolve().parents[2] / "docs"
DOCS_SHOT = DOCS / "ui_asset_graph.png"
FAMILIES = ("no_memory", "source_memory", "source_memory_toe")  # the memory/tree pair that once formed a cycle
BEFORE = ["universe", "prices", "news_raw", "filings_raw", "returns", "evidence", "anchors", "context_cards"]
BACKFILLED = [
    "candidates",
    "labels",
    "experience_tree",
    *[f"{f}/{t}" for f in FAMILIES for t in ("contexts", "reader_outputs", "feedback")],
    "source_memory/memory_snapshot",
    "source_memory_toe/memory_snapshot",
    "source_memory_toe/experience_tree",
    "stock_day_signals",
]
TABLES = [
    "candidates",
    "labels",
    "experience_tree",
    "experience_leaves",
    "memory_snapshot",
    "contexts",
    "reader_outputs",
    "feedback",
    "principle_selections",
    "principle_updates",
    "stock_day_signals",
]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gql(port: int, query: str) -> dict:
    r = httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": query}, timeout=60)
    r.raise_for_status()
    return r.json()["data"]


def _chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    flags = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}",
        "--window-size=1600,1000",
        "--virtual-time-budget=30000",
    ]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=180)


class Hook(http.server.BaseHTTPRequestHandler):
    """A webhook receiver on loopback (what a Slack incoming webhook would be): keeps every body."""

    bodies: list[bytes] = []

    def do_POST(self):  # noqa: N802 - the http.server name
        Hook.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    root = tmp_path_factory.mktemp("ui")
    raw = build_world(root)
    port = _port()
    hook = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    alerts = {
        "webhook_url": f"http://127.0.0.1:{hook.server_address[1]}/hooks/T000/B000/secret",
        "ui_url": f"http://127.0.0.1:{port}",
        "interval_s": 5,
    }
    settings = short_settings(raw, root / "lake", variants={"families": FAMILIES}, alerts=alerts)
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(instance_yaml(home))
    cfg = root / "settings.json"
    cfg.write_text(settings.model_dump_json())
    env = {**os.environ, "DAGSTER_HOME": str(home), "FINRAG_CONFIG": str(cfg)}
    before = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        with dg.DagsterInstance.get() as inst:
            run_range(settings, end=END, decision_start=DECISION_START, instance=inst, only=BEFORE)
    finally:  # the worker's own DAGSTER_HOME back: later tests on this worker read the shipped instance
        if before is None:
            os.environ.pop("DAGSTER_HOME", None)
        else:
            os.environ["DAGSTER_HOME"] = before
    # the reference: the same lake carried on by the in-process path `finrag demo` uses
    shutil.copytree(root / "lake", root / "reference")
    ref = settings.model_copy(update={"lake_dir": root / "reference"})
    with pooled_instance() as inst:
        run_range(ref, end=END, decision_start=DECISION_START, instance=inst, only=BACKFILLED)
    log = open(root / "dagster_dev.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "dagster", "dev", "-h", "127.0.0.1", "-p", str(port), "-m", "finrag_dagster.definitions"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.time() + 240
    while time.time() < deadline:
        try:
            if _gql(port, "{ version }"):
                break
        except (httpx.HTTPError, KeyError, TypeError):
            time.sleep(1)
    else:
        proc.kill()
        pytest.fail((root / "dagster_dev.log").read_text()[-3000:])
    yield port, root
    hook.shutdown()
    os.killpg(proc.pid, 15)  # dagster dev stops its daemon at once on SIGTERM, but often waits ~90 s itself:
    try:  # the grace `finrag dev` gives it, then the process group is killed (nothing is left to save here)
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait(timeout=60)


def test_ui_shows_the_pipeline_and_its_partitions(ui):
    port, root = ui
    assert _gql(port, "mutation { setNuxSeen }")["setNuxSeen"] is True
    nodes = _gql(port, "{ assetNodes { assetKey { path } } }")["assetNodes"]
    keys = {"/".join(n["assetKey"]["path"]) for n in nodes}
    assert {"evidence", "anchors", "candidates", "labels", "source_memory/reader_outputs", "evaluation", "report"} <= keys
    stats = _gql(
        port, '{ assetNodeOrError(assetKey: {path: ["anchors"]}) { ... on AssetNode { partitionStats { numMaterialized numPartitions } } } }'
    )
    ps = stats["assetNodeOrError"]["partitionStats"]
    decision_days = len(nyse().sessions_in_range(DECISION_START, WORLD.end))
    assert ps["numMaterialized"] == 6 and ps["numPartitions"] == decision_days  # decision days only, not the history's
    stats = _gql(port, '{ assetNodeOrError(assetKey: {path: ["prices"]}) { ... on AssetNode { partitionStats { numPartitions } } } }')
    assert stats["assetNodeOrError"]["partitionStats"]["numPartitions"] == len(
        nyse().sessions_in_range(SHORT_HISTORY_START, WORLD.end)
    )  # from the first price day

    graph = _chromium(["--dump-dom", f"http://127.0.0.1:{port}/asset-groups"], root)
    assert graph.returncode == 0, graph.stderr[-2000:]
    assert "Global asset lineage" in graph.stdout and "Welcome" not in graph.stdout  # the first-visit dialog is gone
    assert "Cycle detected" not in graph.stdout and "cannot be displayed" not in graph.stdout
    for group in ("sources", "evidence", "retrieval", "feedback", "source_memory", "no_memory", "evaluation", "sql"):
        assert group in graph.stdout, f"asset group {group} not on the lineage graph"
    catalog = _chromium(["--dump-dom", f"http://127.0.0.1:{port}/assets"], root)
    for name in ("anchors", "evidence", "candidates", "context_cards", "news_raw", "labels"):  # the list is virtualised: the first rows
        assert name in catalog.stdout, f"{name} not in the asset catalog"
    part = _chromium(["--dump-dom", f"http://127.0.0.1:{port}/assets/anchors?view=partitions"], root)
    assert "Materialized (6)" in part.stdout  # the six trading days of the small demo

    shot = root / "asset_graph.png"
    r = _chromium([f"--screenshot={shot}", f"http://127.0.0.1:{port}/asset-groups"], root)
    assert r.returncode == 0 and shot.stat().st_size > 20_000
    if os.environ.get("FINRAG_UPDATE_SCREENSHOT"):
        shutil.copy(shot, DOCS_SHOT)


def _lake_files(root: Path, days: list[str]) -> dict[str, bytes]:
    out = {}
    for t in TABLES:
        for f in sorted((root / t).rglob("part-0.parquet")):
            rel = f.relative_to(root).as_posix()
            if any(f"date={d}" in rel for d in days):
                out[rel] = f.read_bytes()
    return out


def _launch_backfill(port: int, days: list[str], keys: list[str], title: str) -> str:
    """A backfill of ``keys`` over ``days`` launched as the UI's Materialize dialog launches it."""
    q = """mutation($p: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $p) {
             __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message } ... on UnauthorizedError { message } } }"""
    params = {"partitionNames": days, "assetSelection": [{"path": k.split("/")} for k in keys], "fromFailure": False, "title": title}
    r = httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": q, "variables": {"p": params}}, timeout=120).json()
    res = r["data"]["launchPartitionBackfill"]
    assert res["__typename"] == "LaunchBackfillSuccess", res
    return res["backfillId"]


def _wait_backfill(port: int, bid: str, timeout_s: float) -> tuple[str | None, dict]:
    status_q = '{ partitionBackfillOrError(backfillId: "%s") { ... on PartitionBackfill { status error { message } } } }' % bid
    deadline, status, b = time.time() + timeout_s, None, {}
    while time.time() < deadline:
        b = _gql(port, status_q)["partitionBackfillOrError"]
        status = b["status"]
        if status not in ("REQUESTED", "CANCELING", "FAILING"):
            break
        time.sleep(3)
    return status, b


def _backfill_runs(port: int, bid: str) -> list[dict]:
    q = '{ runsOrError(filter: {tags: [{key: "dagster/backfill", value: "%s"}]}) { ... on Runs { results { runId status stepStats { stepKey startTime endTime status } } } } }'
    return _gql(port, q % bid)["runsOrError"]["results"]


def test_a_backfill_launched_as_the_ui_does_is_run_by_the_daemon(ui):
    port, root = ui
    days = [d.isoformat() for d in nyse().sessions_in_range(DECISION_START, END)]
    bid = _launch_backfill(port, days, BACKFILLED, "ui test")
    status, b = _wait_backfill(port, bid, 1500)
    log = (root / "dagster_dev.log").read_text()
    assert "CircularDependencyError" not in log
    assert status in ("COMPLETED", "COMPLETED_SUCCESS"), (status, b, log[-4000:])
    statuses = [x["status"] for x in _backfill_runs(port, bid)]
    assert statuses and set(statuses) == {"SUCCESS"}, statuses
    got, want = _lake_files(root / "lake", days), _lake_files(root / "reference", days)
    assert want and sorted(got) == sorted(want)
    assert [k for k in want if got[k] != want[k]] == []  # the same bytes as the in-process path

    shot = root / "backfill.png"
    r = _chromium([f"--screenshot={shot}", f"http://127.0.0.1:{port}/runs/b/{bid}?tab=partitions"], root)
    assert r.returncode == 0 and shot.stat().st_size > 10_000
    lineage = root / "lineage.png"
    r = _chromium([f"--screenshot={lineage}", f"http://127.0.0.1:{port}/asset-groups"], root)
    assert r.returncode == 0
    pages = {  # docs/production.md: the catalog entry, the blocking reader checks, the freshness policy
        "ui_catalog.png": "assets/candidates",
        "ui_reader_checks.png": "assets/source_memory/reader_outputs?view=checks",
        "ui_freshness.png": "assets/stock_day_signals",
    }
    for name, page in pages.items():
        r = _chromium([f"--screenshot={root / name}", f"http://127.0.0.1:{port}/{page}"], root)
        assert r.returncode == 0 and (root / name).stat().st_size > 10_000, name
    if os.environ.get("FINRAG_UPDATE_SCREENSHOT"):
        shutil.copy(shot, DOCS / "ui_backfill.png")
        shutil.copy(lineage, DOCS_SHOT)
        for name in pages:
            shutil.copy(root / name, DOCS / name)


def test_two_overlapping_backfills_take_turns_on_the_embedding_pool(ui):
    """The pool's one slot is held (as a long ``evidence`` step of another run would hold it) while
    two UI backfills of ``evidence`` start: the daemon's run queue keeps both runs queued on the
    pool (Dagster dequeues a run only when its pools have a free slot); once the slot is free they
    run one after the other, never side by side."""
    from dagster._core.instance.ref import InstanceRef

    port, root = ui
    days = [d.isoformat() for d in nyse().sessions_in_range(DECISION_START, END)]
    runs_q = '{ runsOrError(filter: {tags: [{key: "dagster/backfill", value: "%s"}]}) { ... on Runs { results { runId status allPools } } } }'
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(root / "dagster_home"))) as inst:
        store = inst.event_log_storage
        store.initialize_concurrency_limit_to_default(EMBEDDING_POOL)
        assert store.claim_concurrency_slot(EMBEDDING_POOL, "pool-test", "holder").is_claimed
        try:
            bids = [_launch_backfill(port, days[:1], ["evidence"], "pool a"), _launch_backfill(port, days[1:2], ["evidence"], "pool b")]
            deadline, runs = time.time() + 300, []
            while time.time() < deadline and len(runs) < 2:
                time.sleep(2)
                runs = [r for bid in bids for r in _gql(port, runs_q % bid)["runsOrError"]["results"]]
            time.sleep(10)  # a few turns of the run queue (every 5 s in dagster dev) with the slot still held
            runs = [r for bid in bids for r in _gql(port, runs_q % bid)["runsOrError"]["results"]]
            assert [r["status"] for r in runs] == ["QUEUED", "QUEUED"], (runs, (root / "dagster_dev.log").read_text()[-3000:])
            assert all(EMBEDDING_POOL in r["allPools"] for r in runs)
            shot = root / "pools.png"
            r = _chromium([f"--screenshot={shot}", f"http://127.0.0.1:{port}/runs?q%5B0%5D=status%3AQUEUED&show_runs_within_backfills=true"], root)
            assert r.returncode == 0
        finally:
            store.free_concurrency_slot_for_step("pool-test", "holder")
    for bid in bids:
        assert _wait_backfill(port, bid, 600)[0] in ("COMPLETED", "COMPLETED_SUCCESS")
    steps = sorted(
        (s["startTime"], s["endTime"]) for bid in bids for r in _backfill_runs(port, bid) for s in r["stepStats"] if s["stepKey"] == "evidence"
    )
    assert len(steps) == 2 and steps[0][1] <= steps[1][0], steps  # one after the other
    if os.environ.get("FINRAG_UPDATE_SCREENSHOT"):
        shutil.copy(shot, DOCS / "ui_pools.png")


def test_a_run_that_fails_in_the_daemon_posts_one_alert(ui):
    """A damaged lake file fails a UI backfill's run; the daemon's run-failure sensor posts the
    message to the webhook on loopback: the run, its asset and partition, the error, the UI link,
    and not the webhook's own secret address."""
    port, root = ui
    day = DECISION_START.isoformat()
    f = root / "lake" / "anchors" / f"date={day}" / "part-0.parquet"
    good = f.read_bytes()
    Hook.bodies.clear()
    f.write_bytes(b"not a parquet file")
    try:
        bid = _launch_backfill(port, [day], ["candidates"], "alert test")
        status, _ = _wait_backfill(port, bid, 600)
        deadline = time.time() + 180  # the sensor's tick: every 5 s here (alerts.interval_s)
        while time.time() < deadline and not Hook.bodies:
            time.sleep(2)
    finally:
        f.write_bytes(good)
    assert status in ("COMPLETED_FAILED", "FAILED"), status
    (run,) = _backfill_runs(port, bid)
    assert run["status"] == "FAILURE"
    assert len(Hook.bodies) == 1, (root / "dagster_dev.log").read_text()[-3000:]
    lines = json.loads(Hook.bodies[0])["text"].splitlines()
    assert lines[0].startswith("finrag run failed:") and lines[0].endswith(run["runId"])
    assert lines[1] == "assets: candidates" and day in lines[2]
    assert lines[3].startswith("error: candidates:") and "anchors" in lines[3]
    assert lines[-1] == f"http://127.0.0.1:{port}/runs/{run['runId']}"
    assert "secret" not in "\n".join(lines)
