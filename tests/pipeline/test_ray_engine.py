"""The heavy stages on Ray give the same lake as the local engine (docs/cluster.md).

A two-node Ray cluster is started on 127.0.0.1 (``ray start --head`` and a second worker node,
one CPU each); the sources, history, decision and loop stages of a few weeks run with
``execution.engine = "ray"`` pointed at it, and every parquet file of that lake must be the same
bytes as a local-engine lake of the same settings (the reader cache's wall-clock latency apart).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib.util
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest

from finrag_dagster.pipeline import stages

from .world import DECISION_START, materialize, short_settings

pytestmark = [pytest.mark.slow, pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed")]

END_RAY = dt.date(2019, 2, 12)
FAMILIES = ("no_memory", "source_memory")
RAY = str(Path(sys.executable).with_name("ray"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_cpus(address: str, cpus: int, env: dict[str, str], timeout: float = 180) -> None:
    """Until the cluster at ``address`` reports ``cpus`` CPUs (a second node's ``ray start`` may
    return before the head counts it); asked from a subprocess, so no Ray session is left here."""
    init = f"ray.init(address={address!r}, logging_level='ERROR', log_to_driver=False)"
    probe = f"import ray; {init}; print('CPU', ray.cluster_resources().get('CPU', 0))"
    deadline = time.monotonic() + timeout
    while True:
        out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=timeout)
        seen = [float(ln.split()[1]) for ln in out.stdout.splitlines() if ln.startswith("CPU ")]
        if out.returncode == 0 and seen and seen[-1] >= cpus:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the Ray cluster at {address} did not report {cpus} CPUs in {timeout:g}s: {seen or out.stderr[-2000:]}")
        time.sleep(1)


@pytest.fixture
def ray_cluster(monkeypatch, fresh_ray, tmp_path):
    """A head node and one more worker node on 127.0.0.1, one CPU each, with token authentication
    (Ray's default for ``ray start``: every node and the driver share the token); stopped after.
    Each node is a ``ray start --block`` process of its own, stopped by a signal that ends that
    node's processes only: ``ray stop`` would also stop any other Ray of the machine's user. The
    driver of the test runs in this process: fresh_ray makes its Ray read this token, and drops the
    token and restores the environment after, for the next Ray started in this process."""
    port = _free_port()
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
    fresh_ray()  # a Ray imported earlier in this process has cached the mode (and maybe a token) already
    env = dict(os.environ)
    common = ["--num-cpus", "1", "--object-store-memory", str(200 * 2**20), "--disable-usage-stats", "--block"]
    head = [RAY, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--include-dashboard", "false", *common]
    worker = [RAY, "start", "--address", f"127.0.0.1:{port}", "--node-ip-address", "127.0.0.1", *common]
    nodes: list[subprocess.Popen] = []
    try:
        for cmd, cpus in ((head, 1), (worker, 2)):
            log = open(tmp_path / f"ray_node_{len(nodes)}.log", "w")
            nodes.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            _wait_for_cpus(f"127.0.0.1:{port}", cpus, env)
        yield f"127.0.0.1:{port}"
    finally:
        for node in reversed(nodes):  # SIGTERM: the node's own handler stops its raylet, GCS and workers
            node.terminate()
            try:
                node.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(node.pid, 9)
                node.wait(timeout=30)
        # `ray start --head` wrote the cluster's address where a plain ray.init() looks for a running
        # Ray (`ray stop` would remove it): left behind, it names a cluster that is gone
        current = Path(os.environ.get("RAY_TMPDIR", "/tmp")) / "ray" / "ray_current_cluster"
        if current.exists() and current.read_text().strip().endswith(f":{port}"):
            current.unlink()


def lake_files(root: Path) -> dict[str, str]:
    """Digest of every parquet file; the reader cache's latency_ms (wall clock) is left out."""
    out = {}
    for p in sorted(root.rglob("*.parquet")):
        rel = str(p.relative_to(root))
        if "_staging" in p.parts:
            continue
        if rel.startswith("reader_cache/"):
            out[rel] = hashlib.sha256(pl.read_parquet(p).drop("latency_ms").write_ipc(None).getvalue()).hexdigest()
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _settings(world_raw, lake: Path, **execution):
    return short_settings(world_raw, lake, variants={"families": FAMILIES}, execution={"engine": "local", **execution})


def _run(s):
    only = [a for st in stages(s) if st.name in ("sources", "history", "decisions", "loop") for a in st.assets]
    results = materialize(s, END_RAY, DECISION_START, only=only)
    return {e.asset_key.to_user_string(): e.materialization.metadata for r in results for e in r.get_asset_materialization_events()}


@pytest.fixture(scope="module")
def local_lake(world_raw, tmp_path_factory):
    """The local engine's lake of these settings, and its materialisations' metadata."""
    lake = tmp_path_factory.mktemp("local_engine")
    meta = _run(_settings(world_raw, lake))
    assert meta["evidence"]["engine"].value == "local" and meta["source_memory/reader_outputs"]["engine"].value == "local"
    return lake


def test_a_two_node_ray_cluster_writes_the_local_engines_lake(world_raw, local_lake, tmp_path, ray_cluster):
    meta = _run(_settings(world_raw, tmp_path / "ray", engine="ray", address=ray_cluster))
    assert meta["evidence"]["engine"].value == "ray" and meta["evidence"]["engine_cpus"].value == 2  # both nodes' CPUs
    assert meta["source_memory/reader_outputs"]["engine"].value == "ray"
    assert meta["source_memory/reader_outputs"]["reader_replicas"].value == 2
    local, on_ray = lake_files(local_lake), lake_files(tmp_path / "ray")
    for table in ("evidence/", "reader_outputs/variant=source_memory/", "memory_snapshot/", "reader_cache/"):
        assert any(k.startswith(table) for k in local), table
    assert sorted(on_ray) == sorted(local)
    assert [k for k in local if local[k] != on_ray[k]] == []


def test_dagster_cli_materialises_evidence_on_a_local_ray_in_its_step_process(world_raw, local_lake, tmp_path):
    """The user's path: `dagster asset materialize` (multiprocess executor, the step in its own
    process) with engine = "ray" and no address starts a local Ray in the step, writes the local
    engine's bytes, and leaves no Ray process behind."""
    lake = tmp_path / "lake"
    shutil.copytree(local_lake, lake)
    days = ["2019-02-06", "2019-02-07", "2019-02-08", "2019-02-11", "2019-02-12"]
    for d in days:
        shutil.rmtree(lake / "evidence" / f"date={d}")
    cfg = tmp_path / "settings.json"
    cfg.write_text(_settings(world_raw, lake, engine="ray", num_cpus=2).model_dump_json())
    home = tmp_path / "home"
    home.mkdir()
    # this Ray's own temp folder (short: Ray's socket paths must fit 107 bytes), so the check below
    # sees this step's Ray processes only, not another Ray on the machine
    raytmp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))
    env = {**os.environ, "DAGSTER_HOME": str(home), "FINRAG_CONFIG": str(cfg), "RAY_TMPDIR": str(raytmp)}
    dagster = str(Path(sys.executable).with_name("dagster"))
    cmd = [
        dagster,
        "asset",
        "materialize",
        "-m",
        "finrag_dagster.definitions",
        "--select",
        "evidence",
        "--partition-range",
        f"{days[0]}...{days[-1]}",
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    for d in days:
        (a,) = (local_lake / "evidence" / f"date={d}").glob("*.parquet")
        (b,) = (lake / "evidence" / f"date={d}").glob("*.parquet")
        assert a.read_bytes() == b.read_bytes(), d
    check = (
        "import dagster as dg; i = dg.DagsterInstance.get(); "
        "m = i.get_latest_materialization_event(dg.AssetKey('evidence')).asset_materialization.metadata; "
        "print(m['engine'].value, m['engine_cpus'].value)"
    )
    meta = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, timeout=120)
    assert meta.stdout.split() == ["ray", "2"], meta.stderr[-2000:]
    left = subprocess.run(["pgrep", "-f", f"(raylet|gcs_server).*{raytmp}"], capture_output=True, text=True)
    assert left.stdout.strip() == ""  # the step shut its local Ray down
    assert list(raytmp.glob("ray/session_*")), "the step's Ray did not use the test's temp folder: the check above proves nothing"
    shutil.rmtree(raytmp, ignore_errors=True)
