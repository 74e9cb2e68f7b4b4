"""The pipeline on an object-store lake (docs/cluster.md): every stage of a few weeks, written to a
local S3-compatible server (moto on 127.0.0.1), gives the same bytes as the same run on local disk;
the CLI reads that lake back."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from finrag_dagster.core.tables import Lake
from finrag_dagster.pipeline import stages

from .world import DECISION_START, materialize, short_settings

pytest.importorskip("moto")
pytestmark = pytest.mark.slow

END_S3 = dt.date(2019, 2, 12)
FAMILIES = ("source_memory",)  # memory snapshots, contexts, reader outputs and the reader cache
# Every request goes to a local S3 server: a short look-back (labels stay "insufficient history",
# which is fine here: the property is that both lakes hold the same bytes, whatever they hold)
CALENDAR = {"start": dt.date(2018, 12, 3)}


def _digests(lake: Lake) -> dict[str, str]:
    """sha256 of every partition of every table; the reader cache's latency_ms (wall clock) left out."""
    out = {}
    for table in lake.catalog:
        for f in lake.partition_files(table):
            rel = str(f.relative_to(lake.root))
            data = lake.read_bytes(f)
            if table == "reader_cache":
                data = pl.read_parquet(data).drop("latency_ms").write_ipc(None).getvalue()
            out[rel] = hashlib.sha256(data).hexdigest()
    return out


def _run(s):
    only = [a for st in stages(s) if st.name in ("sources", "history", "decisions", "loop") for a in st.assets]
    materialize(s, END_S3, DECISION_START, only=only)


def test_the_pipeline_writes_the_same_bytes_to_s3_as_to_local_disk(world_raw, s3_env, tmp_path):
    local = short_settings(world_raw, tmp_path / "local", variants={"families": FAMILIES}, calendar=CALENDAR)
    uri = f"s3://{s3_env.bucket()}/finrag/lake"
    remote = short_settings(world_raw, uri, variants={"families": FAMILIES}, calendar=CALENDAR)
    assert remote.lake_uri == uri and not str(remote.lake_dir).startswith("s3")
    _run(local)
    _run(remote)
    want, got = _digests(Lake(local.lake_dir)), _digests(Lake(uri))
    for table in (
        "news_raw",
        "prices",
        "evidence/",
        "anchors/",
        "candidates/",
        "reader_outputs/variant=source_memory/",
        "memory_snapshot/",
        "labels/",
    ):
        assert any(k.startswith(table) for k in want), table
    assert sorted(got) == sorted(want)
    assert [k for k in want if want[k] != got[k]] == []
    # the working files (the news staging, the retrieval store's cache) stay on local disk
    assert (Path(remote.lake_dir) / "_staging" / "candidates_store" / "manifest.json").exists()
    assert not any(k.startswith("_staging") for k in got)

    # the CLI over the S3 lake, as a user runs it (a new process: the endpoint and keys from the environment)
    env = {**os.environ, **s3_env.env(), "FINRAG_LAKE": uri}
    finrag = str(Path(sys.executable).with_name("finrag"))
    out = subprocess.run([finrag, "status", "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    st = json.loads(out.stdout)
    assert st["lake"] == uri and st["last_decision_day"]["evidence"] == END_S3.isoformat()
    summary = subprocess.run([finrag, "summary"], env=env, capture_output=True, text=True, timeout=300)
    assert summary.returncode == 0, summary.stderr[-3000:]
    assert "anchors" in summary.stdout and "evidence" in summary.stdout

    # Dagster's own CLI (multiprocess executor, each step in its own process) rewrites evidence
    # partitions that were lost from the bucket, with the same bytes
    lake = Lake(uri)
    days = ["2019-02-08", "2019-02-11", "2019-02-12"]
    for d in days:
        lake.delete(lake.path("evidence", date=d))
    cfg = tmp_path / "settings.json"
    cfg.write_text(remote.model_dump_json())
    home = tmp_path / "dagster_home"
    home.mkdir()
    env = {**os.environ, **s3_env.env(), "DAGSTER_HOME": str(home), "FINRAG_CONFIG": str(cfg)}
    env.pop("FINRAG_LAKE", None)
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
    assert {k: v for k, v in _digests(lake).items() if k.startswith("evidence/")} == {k: v for k, v in want.items() if k.startswith("evidence/")}
