"""Running it in production the Dagster way (docs/production.md), seen through a real instance:
the catalog's columns, row counts and storage; code versions."""

from __future__ import annotations

import datetime as dt

import dagster as dg
import pytest

from finrag_dagster.core.tables import Lake, package_catalog
from finrag_dagster.defs.build import build_definitions
from finrag_dagster.pipeline import run_range
from tests.instance import pooled_instance

from .world import files_settings

START, DECISION, END = dt.date(2019, 2, 25), dt.date(2019, 3, 1), dt.date(2019, 3, 6)  # 8 sessions of history


@pytest.fixture(scope="module")
def short_run(world_raw, tmp_path_factory):
    """universe and prices over 8 sessions (one range run), in a real instance kept open for the module."""
    lake = Lake(tmp_path_factory.mktemp("lake_prod"))
    s = files_settings(world_raw, lake.root, calendar={"start": START, "end": END, "decision_start": DECISION})
    with pooled_instance() as inst:
        run_range(s, end=END, decision_start=DECISION, instance=inst, only=["universe", "prices"])
        yield lake, s, inst


def _materializations(inst: dg.DagsterInstance, key: str) -> list:
    return [r.asset_materialization for r in inst.fetch_materializations(dg.AssetKey(key), limit=1000).records]


def test_each_partition_of_a_range_run_reports_its_own_row_count(short_run):
    lake, _, inst = short_run
    mats = _materializations(inst, "prices")
    days = lake.materialized_dates("prices")
    assert len(days) == 8 and sorted(m.partition for m in mats) == days
    for m in mats:
        assert m.metadata["dagster/row_count"].value == lake.read("prices", dates=[m.partition]).height > 0
        assert m.metadata["rows_this_run"].value == lake.read("prices", dates=days).height
        assert m.metadata["dagster/uri"].value == lake.location("prices")
    (uni,) = _materializations(inst, "universe")
    assert uni.metadata["dagster/row_count"].value == lake.read("universe").height > 0


def test_the_catalog_shows_every_lake_assets_columns_owner_and_storage(short_run):
    _, s, _ = short_run
    graph = build_definitions(s).resolve_asset_graph()
    lake_assets = 0
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert "team:finrag" in node.owners and node.code_version
        if "lake_table" not in node.metadata:
            continue
        table = node.metadata["lake_table"].value
        lake_assets += 1
        spec = package_catalog()[table]
        cols = node.metadata["dagster/column_schema"].schema.columns
        assert [c.name for c in cols] == [*spec.schema.names, *spec.hive]
        assert [c.constraints.nullable for c in cols[: len(spec.schema)]] == [f.nullable for f in spec.schema]
        assert node.metadata["dagster/uri"].value == str(s.lake_dir / table)
    assert lake_assets >= 40  # every asset but the world, the report and the LoRA adapters


def _versions(s, monkeypatch=None, models=None) -> dict[str, str]:
    if models is not None:
        monkeypatch.setattr("finrag_dagster.defs.stages.load_models", lambda *a, **k: models)
    graph = build_definitions(s).resolve_asset_graph()
    return {k.to_user_string(): graph.get(k).code_version for k in graph.get_all_asset_keys()}


def test_a_code_version_changes_with_what_decides_the_assets_bytes_and_nothing_else(short_run, monkeypatch):
    from dataclasses import replace

    from finrag_dagster.core.storage.sqlmodels import load_models

    _, s, _ = short_run
    base = _versions(s)
    assert len(set(base.values())) > 10

    def changed(other: dict[str, str]) -> set[str]:
        return {k for k in base if other[k] != base[k]}

    # a SQL model's text: that model alone (what reads it goes unsynced through its data version)
    models = [replace(m, sql=m.sql + "\n-- edited\n") if m.name == "returns" else m for m in load_models()]
    assert changed(_versions(s, monkeypatch, models)) == {"returns"}
    monkeypatch.undo()
    # a reader setting that changes answers: every family's loop, and the steps that ask the reader
    fams = s.variants.families
    loop = {f"{f}/{n}" for f in fams for n in ("memory_snapshot", "experience_tree", "contexts", "reader_outputs")} & set(base)
    reader_users = loop | {"experience_tree", "sensitivity", "experience_task", "lora_adapters"}
    assert changed(_versions(s.with_overrides(reader={"max_tokens": 123}))) == reader_users
    # one that changes only how long it waits: nothing
    assert changed(_versions(s.with_overrides(reader={"timeout_s": 5.0, "concurrency": 2}))) == set()


def test_the_instance_sees_assets_unsynced_when_their_code_version_changes(short_run):
    from dagster._core.definitions.data_version import StaleStatus
    from dagster._utils.test.data_versions import get_stale_status_resolver

    lake, s, inst = short_run
    day = lake.materialized_dates("prices")[-1]
    now = get_stale_status_resolver(inst, list(build_definitions(s).assets))
    assert now.get_status(dg.AssetKey("universe")) == StaleStatus.FRESH
    assert now.get_status(dg.AssetKey("prices"), day) == StaleStatus.FRESH
    edited = get_stale_status_resolver(inst, list(build_definitions(s.with_overrides(sources={"news_dates_only": True})).assets))
    assert edited.get_status(dg.AssetKey("universe")) == StaleStatus.STALE
    assert [c.category.value for c in edited.get_stale_causes(dg.AssetKey("universe"))] == ["CODE"]
    assert edited.get_status(dg.AssetKey("prices"), day) == StaleStatus.STALE


def test_the_reader_checks_pass_on_every_familys_outputs_of_the_embedded_reader(small_lake):
    from finrag_dagster.core.loop import variants_of
    from finrag_dagster.defs.reader_checks import reader_check_results, tallies_from_lake

    lake, s, _ = small_lake
    days = lake.materialized_dates("anchors")
    for fam in s.variants.families:
        names = [v.name for v in variants_of(fam, s.memory.lam, s.variants.shuffle_seeds, s.lora.seeds)]
        res = reader_check_results(dg.AssetKey([fam, "reader_outputs"]), tallies_from_lake(lake, names, days), s.checks)
        assert [r.check_name for r in res if not r.passed] == [], (fam, [r.metadata for r in res])
        assert 0.8 * len(days) <= res[0].metadata["days_checked"].value <= len(days)  # the days with answers
        assert res[2].metadata["judged"].value  # enough answers over the run to judge the mix


def test_a_reader_that_answers_garbage_stops_what_reads_its_outputs(small_lake, tmp_path, monkeypatch):
    import shutil

    from finrag_dagster.core.reader.backends import EmbeddedBackend, Generation

    lake, settings, _ = small_lake
    copy = Lake(tmp_path / "lake")
    shutil.copytree(lake.root, copy.root)
    s = settings.with_overrides(lake_dir=copy.root, variants={"families": ["no_memory"]})
    day = END
    only = ["no_memory/contexts", "no_memory/reader_outputs", "no_memory/feedback", "stock_day_signals"]
    downstream = [dg.AssetKey(["no_memory", "feedback"]), dg.AssetKey("stock_day_signals")]
    with pooled_instance() as inst:
        run_range(s, end=day, decision_start=day, instance=inst, only=only)  # the embedded reader: checks pass
        assert [len(inst.fetch_materializations(k, limit=5).records) for k in downstream] == [1, 1]
        counts = {}
        for name in ("reader_outputs", "feedback"):  # the loop's and the feedback's own row counts
            (rec,) = inst.fetch_materializations(dg.AssetKey(["no_memory", name]), limit=5).records
            counts[name] = rec.asset_materialization.metadata["dagster/row_count"].value
            assert counts[name] == copy.read(name, dates=[day.isoformat()], variant="no_memory").height
        assert counts["reader_outputs"] > 0  # (no label of the last day has matured: no feedback rows)
        monkeypatch.setattr(EmbeddedBackend, "model", property(lambda self: "garbage-reader"))  # no cached answer applies
        monkeypatch.setattr(EmbeddedBackend, "generate", lambda self, reqs: [Generation("The stock will go up, I think.") for _ in reqs])
        with pytest.raises(Exception, match="blocking asset check"):
            run_range(s, end=day, decision_start=day, instance=inst, only=only)
        outs = inst.fetch_materializations(dg.AssetKey(["no_memory", "reader_outputs"]), limit=5).records
        assert len(outs) == 2  # the reader's answers are recorded, and their check failed ...
        assert [len(inst.fetch_materializations(k, limit=5).records) for k in downstream] == [1, 1]  # ... so nothing read them
    assert not copy.read("reader_outputs", dates=[day.isoformat()], variant="no_memory")["valid_json"].any()
