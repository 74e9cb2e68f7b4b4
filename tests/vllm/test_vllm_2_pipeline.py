"""The loop assets with ``reader.backend = "vllm"`` (two families, three decision days, the small
world of the pipeline tests): every table complete, and a second run, in a copy of the lake before
the loop and with a new engine, writes the same bytes (the reader cache's wall-clock latency apart)."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import polars as pl
import pytest

from finrag_dagster.core.reader import backends as B
from finrag_dagster.core.tables import Lake

from .conftest import FAMILIES, run_loop

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
DAYS = ["2019-02-01", "2019-02-04", "2019-02-05"]


def lake_files(root: Path) -> dict[str, str]:
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


def test_the_vllm_loop_writes_complete_tables(vllm_world):
    _, _, lake_dir, meta = vllm_world
    lake = Lake(str(lake_dir))
    anchors = lake.read("anchors", dates=DAYS)
    assert anchors.height > 0
    for fam in FAMILIES:
        assert lake.materialized_dates("reader_outputs", variant=fam) == DAYS, fam
        out = lake.read("reader_outputs", dates=DAYS, variant=fam)
        assert out.height == 3 * anchors.height and set(out["anchor_id"]) == set(anchors["anchor_id"])
        assert set(out["backend"]) == {"vllm"} and set(out["model"]) == {"SmolLM2-135M-Instruct.Q4_1.gguf"}
        assert out["valid_json"].all() and out["horizon_ok"].all()
        assert all(set(v) <= set(c) for v, c in zip(out["valid_ids"], out["cited_ids"]))
        m = meta[f"{fam}/reader_outputs"]
        assert m["backend"].value == "vllm"
    assert lake.materialized_dates("memory_snapshot", variant="source_memory") == DAYS
    assert set(lake.read("reader_cache", dates=DAYS)["backend"]) == {"vllm"}


def test_a_second_run_with_a_new_engine_writes_the_same_bytes(vllm_world, tmp_path):
    raw, base, first, _ = vllm_world
    B.close_vllm_engine()  # the second run starts its own engine
    second = tmp_path / "lake"
    shutil.copytree(base, second)
    run_loop(raw, second)
    a, b = lake_files(first), lake_files(second)
    assert any(k.startswith("reader_outputs/variant=source_memory/") for k in a)
    assert sorted(a) == sorted(b)
    assert [k for k in a if a[k] != b[k]] == []
