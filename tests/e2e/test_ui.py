"""The Dagster UI, checked as a person would: `dagster dev` on 127.0.0.1 over a small demo lake,
opened in headless Chromium (Debian's package); the first-visit pop-up is dismissed through the
GraphQL `setNuxSeen` mutation. Asserts that the asset graph names the pipeline's assets and that
partitions are materialised, and keeps a screenshot."""

import datetime as dt
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import httpx
import pytest

from finrag_dagster.pipeline import run_range
from tests.pipeline.world import DECISION_START, build_world, files_settings

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is installed by .ci/run")]
END = dt.date(2019, 2, 8)
DOCS_SHOT = Path(__file__).resolve().parents[2] / "docs" / "ui_asset_graph.png"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gql(port: int, query: str) -> dict:
    r = httpx.post(f"http://127.0.0.1:{port}/graphql", json={"query": query}, timeout=60)
    r.raise_for_status()
    return r.json()["data"]


def _chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp / 'profile'}", "--window-size=1600,1000",
             "--virtual-time-budget=30000"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    root = tmp_path_factory.mktemp("ui")
    raw = build_world(root)
    settings = files_settings(raw, root / "lake")
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    cfg = root / "settings.json"
    cfg.write_text(settings.model_dump_json())
    env = {**os.environ, "DAGSTER_HOME": str(home), "FINRAG_CONFIG": str(cfg)}
    os.environ["DAGSTER_HOME"] = str(home)
    try:
        with dg.DagsterInstance.get() as inst:
            run_range(settings, end=END, decision_start=DECISION_START, instance=inst, only=["universe", "prices", "news_raw", "filings_raw", "returns", "evidence", "anchors", "context_cards"])
    finally:
        os.environ.pop("DAGSTER_HOME", None)
    port = _port()
    log = open(root / "dagster_dev.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "dagster", "dev", "-h", "127.0.0.1", "-p", str(port), "-m", "finrag_dagster.definitions"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
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
    os.killpg(proc.pid, 15)  # dagster dev stops its webserver, daemon and code server on SIGTERM ...
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:  # ... but on a busy 2-core machine that can take minutes: clean up hard
        os.killpg(proc.pid, 9)
        proc.wait(timeout=60)


def test_ui_shows_the_pipeline_and_its_partitions(ui):
    port, root = ui
    assert _gql(port, "mutation { setNuxSeen }")["setNuxSeen"] is True
    nodes = _gql(port, "{ assetNodes { assetKey { path } } }")["assetNodes"]
    keys = {"/".join(n["assetKey"]["path"]) for n in nodes}
    assert {"evidence", "anchors", "candidates", "labels", "source_memory/reader_outputs", "evaluation", "report"} <= keys
    stats = _gql(port, '{ assetNodeOrError(assetKey: {path: ["anchors"]}) { ... on AssetNode { partitionStats { numMaterialized numPartitions } } } }')
    ps = stats["assetNodeOrError"]["partitionStats"]
    assert ps["numMaterialized"] == 6 and ps["numPartitions"] > 300  # 2019-02-01 .. 2019-02-08 of the whole calendar

    graph = _chromium(["--dump-dom", f"http://127.0.0.1:{port}/asset-groups"], root)
    assert graph.returncode == 0, graph.stderr[-2000:]
    assert "Global asset lineage" in graph.stdout and "Welcome" not in graph.stdout  # the first-visit dialog is gone
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
