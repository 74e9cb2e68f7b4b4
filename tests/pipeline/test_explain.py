"""What the memory changed and `finrag explain` on the shared small lake: counts checked against the
parquet files by SQL, the CLI in a subprocess, and the lineage's release days against the snapshots."""

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.evaluation.changes import memory_changes
from finrag_dagster.core.explain import released_on
from finrag_dagster.core.splits import split_days

FINRAG = [str(Path(sys.executable).parent / "finrag")]


@pytest.fixture(scope="module")
def lake_cfg(small_lake, tmp_path_factory):
    lake, settings, _ = small_lake
    cfg = tmp_path_factory.mktemp("explain") / "s.json"
    cfg.write_text(settings.model_dump_json())
    return lake, settings, cfg


def run_cli(cfg: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DAGSTER_HOME": str(cfg.parent / "nohome")}
    return subprocess.run([*FINRAG, "explain", *args, "--config", str(cfg)], capture_output=True, text=True, timeout=60, env=env)


def sql_counts(lake, variant: str, twin: str, days: list[str]) -> tuple[int, int, int]:
    """(anchors, top-5 sets changed, answers changed) by SQL over the parquet files, independent of core.evaluation.changes."""
    con = duckdb.connect()
    glob = lambda t, v: [str(lake.root / t / f"variant={v}" / f"date={d}" / "part-0.parquet") for d in days]  # noqa: E731
    sets = "SELECT anchor_id, string_agg(passage_id, ',' ORDER BY passage_id) s FROM read_parquet({}) WHERE position <= 5 GROUP BY 1"
    sigs = "SELECT anchor_id, string_agg(horizon || signal, ',' ORDER BY horizon) s FROM read_parquet({}) GROUP BY 1"
    q = f"""WITH cv AS ({sets.format(glob("contexts", variant))}), ct AS ({sets.format(glob("contexts", twin))}),
            ov AS ({sigs.format(glob("reader_outputs", variant))}), ot AS ({sigs.format(glob("reader_outputs", twin))})
            SELECT count(*), count(*) FILTER (WHERE coalesce(cv.s, '') <> coalesce(ct.s, '')), count(*) FILTER (WHERE ov.s <> ot.s)
            FROM ov JOIN ot USING (anchor_id) LEFT JOIN cv USING (anchor_id) LEFT JOIN ct USING (anchor_id)"""
    return con.execute(q).fetchone()


def test_counts_match_the_files(lake_cfg):
    lake, settings, _ = lake_cfg
    cal = nyse()
    summary, per, reach = memory_changes(settings, lake, cal, "test")
    days = split_days(settings, cal, lake, "test")
    assert summary.height == 1 + 1 + 2 * settings.variants.shuffle_seeds + 1  # every memory variant of the default families
    for r in summary.iter_rows(named=True):
        assert (r["anchors"], r["contexts_changed"], r["answers_changed"]) == sql_counts(lake, r["variant"], r["twin"], days)
    assert dict(zip(summary["variant"], summary["twin"]))["source_memory_toe"] == "toe"
    assert per.filter(pl.col("variant") == "source_memory").height == summary.filter(pl.col("variant") == "source_memory")["anchors"][0]
    assert reach["pools"] == lake.read("candidates", dates=days)["anchor_id"].n_unique() and 0 <= reach["reachable_share"] <= 1


def test_lineage_released_after_maturity_and_in_that_snapshot(lake_cfg):
    """Every applied feedback row is released on the session after its maturity (never before), and the
    snapshot of that day holds exactly the updates of the rows released on it."""
    lake, settings, _ = lake_cfg
    cal = nyse()
    fb = lake.read("feedback", variant="source_memory").filter(pl.col("applied"))
    assert fb.height > 0
    credits: dict[str, int] = {}
    for r in fb.iter_rows(named=True):
        d, h = r["date"].isoformat(), int(r["horizon"][:-1])
        assert r["maturity_day"] == cal.offset(d, h)
        rel = released_on(cal, settings, d, r["maturity_day"])
        if rel is not None:
            assert rel > r["maturity_day"].isoformat() > d
            credits[rel] = credits.get(rel, 0) + len(set(r["families"]))
    snaps = lake.read("memory_snapshot", variant="source_memory", columns=["updates"]).group_by("date").agg(pl.col("updates").sum()).sort("date")
    total = dict(zip([x.isoformat() for x in snaps["date"]], snaps["updates"]))
    days = sorted(total)
    for prev, d in zip(days, days[1:]):
        if settings.splits.ranges()["test"][0].isoformat() == d or total[d] < total[prev]:
            continue  # a split start: the memory resets
        assert total[d] - total[prev] == credits.get(d, 0), d
    assert sum(credits.values()) > 0


def test_explain_cli_json(lake_cfg):
    lake, settings, cfg = lake_cfg
    aid = lake.read("feedback", variant="source_memory").filter(pl.col("applied"))["anchor_id"][0]
    r = run_cli(cfg, aid, "--json", "--variants", "no_memory,source_memory")
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    assert set(out) == {"anchor", "labels", "variants", "titles"}
    assert out["anchor"]["anchor_id"] == aid and {"day", "decision_time", "ticker", "event_type"} <= set(out["anchor"])
    by = {v["variant"]: v for v in out["variants"]}
    assert set(by) == {"no_memory", "source_memory"}
    for v in by.values():
        assert v["context_recomputed_agrees"], v["variant"]
        assert len(v["context"]) <= 5 and [p["passage_id"] for p in v["pool"] if p["in_context"]] == v["context"]
        assert {"bm25", "dense", "relevance", "memory_adj", "final_score", "public_time", "source_family"} <= set(v["pool"][0])
        assert {a["horizon"] for a in v["answers"]} == {"1D", "3D", "5D"}
    assert all(p["memory_adj"] == 0 for p in by["no_memory"]["pool"])
    fb = by["source_memory"]["feedback"]
    assert fb and all(f["released_on"] is None or f["released_on"] > f["maturity_day"] for f in fb)
    ctx = lake.read("contexts", variant="source_memory", dates=[out["anchor"]["day"]]).filter(pl.col("anchor_id") == aid).sort("position")
    assert by["source_memory"]["context"] == ctx["passage_id"].to_list()


def test_explain_cli_changed_and_errors(lake_cfg):
    lake, settings, cfg = lake_cfg
    summary, per, _ = memory_changes(settings, lake, nyse(), "test")
    r = run_cli(cfg, "--changed", "--json", "--variants", "source_memory")
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    want = per.filter((pl.col("variant") == "source_memory") & (pl.col("context_changed") | pl.col("answer_changed")))
    assert sorted(a["anchor_id"] for a in out["anchors"]) == sorted(want["anchor_id"].to_list())
    n = summary.filter(pl.col("variant") == "source_memory")["contexts_changed"][0]
    assert len(out["counts"]) == 1 and f"{n:,} of " in out["counts"][0]
    r = run_cli(cfg, "N-no-such-anchor")
    assert r.returncode == 2 and "finrag explain --day" in r.stdout
    r = run_cli(cfg, "x", "--lake", str(cfg.parent / "missing"))
    assert r.returncode == 1 and "no lake at" in r.stderr
