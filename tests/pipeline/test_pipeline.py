"""Dagster definitions load; consecutive partitions materialise with dagster.materialize; checks pass."""

import datetime as dt
import subprocess
import sys

import dagster as dg
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.reader.backends import BackendConfig, EmbeddedBackend
from finrag_dagster.defs.build import build_definitions
from finrag_dagster.pipeline import run_range
from tests.instance import pooled_instance

from .world import DECISION_START, END, HISTORY_START

cal = nyse()


def test_definitions_load_every_asset_and_job():
    defs = build_definitions()
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"synthetic_world", "universe", "prices", "news_raw", "filings_raw", "evidence", "anchors", "context_cards", "returns"} <= keys
    defs.resolve_job_def("finrag_daily")
    # the same check the dagster CLI does, in a fresh process, from workspace-style module loading
    out = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-m", "finrag_dagster.definitions"], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]


def test_sql_model_upstreams_come_from_the_sql():
    defs = build_definitions()
    graph = defs.resolve_asset_graph()
    assert {k.to_user_string() for k in graph.get(dg.AssetKey("returns")).parent_keys} == {"prices"}


def test_consecutive_partitions_materialise_and_checks_pass(small_lake):
    lake, settings, results = small_lake
    assert all(r.success for r in results)
    checks = [e for r in results for e in r.get_asset_check_evaluations()]
    assert checks and all(c.passed for c in checks), [(c.asset_key, c.check_name) for c in checks if not c.passed]
    days = [d.isoformat() for d in cal.sessions_in_range(DECISION_START, END)]
    for table in ("anchors", "context_cards", "candidates"):
        assert lake.materialized_dates(table) == days
    hist = [d.isoformat() for d in cal.sessions_in_range(HISTORY_START, END)]
    assert lake.materialized_dates("evidence") == hist
    a = lake.read("anchors", dates=days)
    assert a.height > 50
    closes = {d: cal.close_time(d).to_pydatetime() for d in cal.sessions_in_range(DECISION_START, END)}
    assert all(r["decision_time"] == closes[r["date"]] and r["public_time"] <= r["decision_time"] for r in a.iter_rows(named=True))
    assert set(a["session"]) >= {"pre_market", "regular", "after_close", "date_only"}


def test_rows_in_equal_accepted_plus_quarantined(small_lake):
    lake, settings, results = small_lake
    metas = {}
    for r in results:
        for ev in r.get_asset_materialization_events():
            mat = ev.event_specific_data.materialization
            if "source_rows_in" in mat.metadata:
                metas[mat.asset_key.to_user_string()] = {k: v.value for k, v in mat.metadata.items()}
    assert set(metas) == {"prices", "news_raw", "filings_raw"}
    for name, m in metas.items():
        assert m["source_rows_in"] == m["source_rows_accepted"] + m["source_rows_quarantined"], name
        q = lake.read("quarantine", source_table=name)
        assert q.height == m["source_rows_quarantined"]


def test_candidate_pools_follow_the_rules(small_lake):
    lake, settings, _ = small_lake
    days = [d.isoformat() for d in cal.sessions_in_range(DECISION_START, END)]
    c = lake.read("candidates", dates=days)
    ev = lake.read("evidence").select("passage_id", "public_time", "url", "title_key", "dup_cluster", "ticker")
    a = lake.read("anchors", dates=days).select(
        "anchor_id", "date", "decision_time", pl.col("url").alias("a_url"), pl.col("dup_cluster").alias("a_cl"), pl.col("ticker").alias("a_ticker")
    )
    j = c.join(ev, on="passage_id").join(a, on="anchor_id")
    assert j.height == c.height > 0
    assert (j["public_time"] < j["decision_time"]).all()  # filter first: nothing at or after the decision
    assert (j["passage_id"] != j["anchor_id"]).all() and (j["url"] != j["a_url"]).all() and (j["dup_cluster"] != j["a_cl"]).all()
    per = c.group_by("anchor_id").agg(pl.len().alias("n"), pl.col("is_peer").sum().alias("peers"), pl.col("relevance").max().alias("rmax"))
    assert per["n"].max() <= 20 and per["peers"].max() <= 4
    assert ((j["ticker"] != j["a_ticker"]) == j["is_peer"]).all()
    assert c["relevance"].min() >= 0 and c["relevance"].max() <= 1


def test_search_cli_obeys_as_of(small_lake):
    import json

    from typer.testing import CliRunner

    from finrag_dagster.cli import app

    lake, settings, _ = small_lake
    as_of = "2019-02-15"
    res = CliRunner().invoke(app, ["search", "guidance revenue outlook", "--as-of", as_of, "--k", "30", "--json", "--lake", str(lake.root)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["hits"], "the query should find something"
    limit = dt.datetime(2019, 2, 16, 4, 59, 59, tzinfo=dt.timezone.utc)  # end of 2019-02-15 in New York
    assert all(dt.datetime.fromisoformat(h["public_time"]) < limit for h in out["hits"])
    assert out["context_tokens"] <= 5000 and out["citations"]


def test_evaluation_tables_and_report(small_lake):
    lake, settings, _ = small_lake
    ev = lake.read("evaluation")
    assert {"Table 2", "Table 3", "Table 4"} <= set(ev["table"])
    t4 = ev.filter((pl.col("table") == "Table 4") & (pl.col("metric") == "Turnover"))
    qqq = t4.filter(pl.col("row") == "QQQ buy-and-hold")["value"][0]
    assert qqq == 0.0 and t4.filter(pl.col("row") == "Frozen + No Memory")["value"][0] > 0
    t3 = ev.filter((pl.col("table") == "Table 3") & (pl.col("row") == "+ Shuffled feedback labels"))
    assert t3["std"].null_count() == 0  # five shuffles -> a standard deviation
    sens = lake.read("sensitivity")
    assert sens.filter(pl.col("row") == "selected").height == 2
    assert len(set(sens["row"])) == 11  # 5 lambdas + 5 deltas + the selection
    from finrag_dagster.core.evaluation.report import report_path

    html = report_path(settings).read_text()
    assert "Table 2. Event-level prediction quality" in html and "Table 6." in html and html.count("data:image/png;base64,") >= 2
    assert "Experience task (seed 002 Table 1)" in html and "Experience tree `toe`" in html


def test_experience_task_scores_every_sector_with_matured_alphas_only(small_lake):
    from finrag_dagster.core.experience.task import METHODS

    lake, settings, _ = small_lake
    res = lake.read("experience_task")
    assert set(res["method"].unique()) >= set(METHODS[:5]) and {"Table 1", "Table 6", "Table 2"} <= set(res["table"])
    sc = lake.read("experience_task_scores")
    days = sorted(sc["date"].unique().to_list())
    assert days and days[0] >= settings.splits.test[0]
    uni = lake.read("universe").filter(~pl.col("is_benchmark"))
    assert sc["target"].n_unique() == uni["sector"].n_unique()
    assert sc["score"].is_between(-1, 1).all()
    last_px = lake.read("prices")["date"].max()
    for h in (1, 5, 10, 20):  # alpha exists exactly when close(T+h) is in prices
        g = sc.filter((pl.col("horizon") == f"{h}d") & (pl.col("method") == "Pipe"))
        for d, a in zip(g["date"].to_list(), g["alpha"].to_list()):
            assert (a is not None) == (cal.offset(d, h) <= last_px)


def test_experience_tree_is_induced_from_the_train_split_and_carried(small_lake):
    from finrag_dagster.core.experience.prior import TREE_ID
    from finrag_dagster.core.experience.store import read_tree
    from finrag_dagster.core.experience.tree import ToEParams
    from finrag_dagster.core.splits import induction_day
    from finrag_dagster.core.storage.lake import file_digest

    lake, settings, results = small_lake
    days = [d.isoformat() for d in cal.sessions_in_range(DECISION_START, END)]
    assert lake.materialized_dates("experience_tree", tree_id=TREE_ID) == days
    assert induction_day(settings, cal) == "2019-01-31" < days[0]  # the world's train split is January 2019
    # no updates yet (part 3): every snapshot is the induced tree, byte for byte, and its content is written once
    assert len({file_digest(lake.path("experience_tree", tree_id=TREE_ID, date=d)) for d in days}) == 1
    assert lake.materialized_dates("experience_leaves", tree_id=TREE_ID) == days[:1]
    tree = read_tree(lake, TREE_ID, days[0], ToEParams.from_settings(settings))
    assert read_tree(lake, TREE_ID, days[-1], ToEParams.from_settings(settings)).to_markdown() == tree.to_markdown()
    assert len(tree.factors) == 8 and tree.leaves() and all(x.q == {"1D": 1.0, "3D": 1.0, "5D": 1.0} for x in tree.leaves())
    metas = [
        ev.event_specific_data.materialization.metadata
        for r in results
        for ev in r.get_asset_materialization_events()
        if ev.event_specific_data.materialization.asset_key == dg.AssetKey("experience_tree")
    ]
    assert metas and "analysis direction" in metas[0]["tree"].value and metas[0]["principles"].value == len(tree.leaves())


def test_experience_content_is_written_once_and_the_daily_state_carries_none_of_it(small_lake):
    """experience_leaves holds a position's content once per version (the first day it appears and
    each day it changes, e.g. a position reused after the reset at the test split's start), the
    daily experience_tree partition only positions, ids, utilities and counts, and every day's tree
    reads back with the content dated on or before it."""
    import pyarrow.parquet as pq

    from finrag_dagster.core.experience.store import content_versions, read_rows
    from finrag_dagster.core.experience.tree import split_table

    lake, _, _ = small_lake
    days = [d.isoformat() for d in cal.sessions_in_range(DECISION_START, END)]
    for tree_id in ("prior", "toe", "source_memory_toe"):
        c = content_versions(lake, tree_id, days[-1])
        assert c.num_rows and set(lake.materialized_dates("experience_leaves", tree_id=tree_id)) <= set(days)
        versions: dict = {}
        for fi, li, lid, pr, emb, d in zip(
            *(c.column(n).to_pylist() for n in ("factor_index", "leaf_index", "leaf_id", "principle", "embedding", "date"))
        ):
            versions.setdefault((fi, li), []).append((d, lid, pr, emb))
        for pos, vs in versions.items():  # a position stored again only with other content
            assert all(a[1:] != b[1:] for a, b in zip(vs, vs[1:])), (tree_id, pos)
        ids = [lid for lid in c.column("leaf_id").to_pylist() if lid is not None]
        if tree_id == "prior":
            assert len(ids) == len(set(ids))  # no updates, no reset: each leaf exactly once
        for d in days:
            f = lake.path("experience_tree", tree_id=tree_id, date=d)
            assert {"embedding", "principle", "keywords"}.isdisjoint(pq.read_schema(f).names)
            rows = read_rows(lake, tree_id, d)
            assert split_table(rows)[0].equals(pq.read_table(f))  # the state as stored, with ...
            day = dt.date.fromisoformat(d)
            for fi, li, lid, pr in zip(*(rows.column(n).to_pylist() for n in ("factor_index", "leaf_index", "leaf_id", "principle"))):
                assert max((v for v in versions[(fi, li)] if v[0] <= day), key=lambda v: v[0])[1:3] == (
                    lid,
                    pr,
                )  # ... the last content of D or before


def test_files_mode_definitions_resolve_every_job(tmp_path):
    from finrag_dagster.core.settings import Settings

    s = Settings(lake_dir=tmp_path, sources={"kind": "files", "universe": "u.csv"})
    defs = build_definitions(s)
    assert "synthetic_world" not in {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    defs.resolve_all_job_defs()


def test_toe_variants_learn_only_from_matured_labels(small_lake):
    from finrag_dagster.core.experience.prior import TREE_ID
    from finrag_dagster.core.experience.store import read_tree
    from finrag_dagster.core.experience.tree import ToEParams

    lake, settings, _ = small_lake
    days = [d.isoformat() for d in cal.sessions_in_range(DECISION_START, END)]
    params = ToEParams.from_settings(settings)
    prior = read_tree(lake, TREE_ID, days[0], params)
    applied = 0
    for v in ("toe", "source_memory_toe"):
        assert lake.materialized_dates("experience_tree", tree_id=v) == days
        # the split start (validation begins on DECISION_START) resets to the prior tree: no update yet
        first = read_tree(lake, v, days[0], params)
        prior_ids = {x.leaf_id for x in prior.leaves()}
        assert prior_ids <= {x.leaf_id for x in first.leaves()}  # the prior's leaves, plus the day's expansions
        assert all(x.support == 0 for x in first.leaves() if x.leaf_id not in prior_ids)
        assert all(x.q == {"1D": 1.0, "3D": 1.0, "5D": 1.0} and x.n_hit == 0 for x in first.leaves())
        sel = lake.read("principle_selections", dates=days, variant=v)
        a = lake.read("anchors", dates=days)
        assert sel.height == a.height and set(sel["outcome"]) <= {"reused", "expanded", "no_factor", "factor_full"}
        assert sel.filter(pl.col("leaf_id").is_not_null()).height > 0
        for d in days[1:]:
            up = lake.read("principle_updates", dates=[d], variant=v)
            prev = cal.offset(d, -1)
            for dd, h in zip(up["decision_day"].to_list(), up["horizon"].to_list()):
                assert cal.offset(dd, int(h[0])) == prev  # matured exactly on D-1, never later
            applied += int((up["outcome"] == "applied").sum()) if up.height else 0
        last = read_tree(lake, v, days[-1], params)
        assert any(q != 1.0 for x in last.leaves() for q in x.q.values())
        # the principle is in the prompt: those anchors' prompts differ from no_memory's
        o = lake.read("reader_outputs", dates=days, variant=v).select("anchor_id", "horizon", "prompt_hash")
        base = lake.read("reader_outputs", dates=days, variant="no_memory").select("anchor_id", "horizon", pl.col("prompt_hash").alias("base"))
        j = o.join(base, on=["anchor_id", "horizon"]).join(sel.select("anchor_id", "leaf_id"), on="anchor_id")
        with_p = j.filter(pl.col("leaf_id").is_not_null())
        assert with_p.height and (with_p["prompt_hash"] != with_p["base"]).all()
        if v == "toe":  # same contexts as no_memory (lambda = 0): no principle, same prompt
            without = j.filter(pl.col("leaf_id").is_null())
            assert (without["prompt_hash"] == without["base"]).all()
    assert applied > 0
    ev = lake.read("evaluation")
    assert {"Frozen + ToE", "Frozen + Source Memory + ToE"} <= set(ev.filter(pl.col("table") == "Table 2")["row"])
    assert {"Frozen + ToE", "Frozen + Source Memory + ToE"} <= set(ev.filter(pl.col("table") == "Table 4")["row"])


def test_test_split_runs_with_the_setting_selected_on_validation(small_lake):
    lake, settings, results = small_lake
    sens = lake.read("sensitivity").filter(pl.col("row") == "selected")
    chosen = dict(zip(sens["metric"].to_list(), sens["value"].to_list()))
    metas = {
        ev.event_specific_data.materialization.asset_key.to_user_string(): ev.event_specific_data.materialization.metadata
        for r in results
        for ev in r.get_asset_materialization_events()
    }
    note = metas["source_memory/contexts"]["test_split_params"].value
    assert note == f"test split: lambda={chosen['lambda']}, delta={chosen['delta']} selected on validation (Table 6)"
    assert "matured before 2019-03-01" in metas["sensitivity"]["labels_used"].value
    # the snapshots of the test split use the selected delta: no adjustment beyond it
    test_days = [d.isoformat() for d in cal.sessions_in_range(settings.splits.test[0], END)]
    snap = lake.read("memory_snapshot", dates=test_days, variant="source_memory")
    assert snap.height and snap["adjustment"].abs().max() <= chosen["delta"] + 1e-12


def test_loop_refuses_the_test_split_without_a_selection(small_lake, tmp_path):
    import pytest

    from finrag_dagster.core.errors import MissingInput
    from finrag_dagster.core.loop_io import test_split_params
    from finrag_dagster.core.memory.source_memory import MemoryParams
    from finrag_dagster.core.tables import Lake

    lake, settings, _ = small_lake
    empty = Lake(tmp_path / "lake")
    (tmp_path / "lake").mkdir()
    days = [d.isoformat() for d in cal.sessions_in_range(DECISION_START, END)]
    with pytest.raises(MissingInput, match="sensitivity"):
        test_split_params(settings, empty, cal, MemoryParams(), days)
    f, note = test_split_params(settings.with_overrides(memory={"test_params": "settings"}), empty, cal, MemoryParams(lam=0.3), days)
    assert f(days[-1]).lam == 0.3 and "memory.test_params = settings" in note
    f, _ = test_split_params(settings, lake, cal, MemoryParams(lam=0.3, delta=0.2), days)
    assert f(days[0]).lam == 0.3  # validation keeps settings.memory


def test_the_evidence_reader_is_chosen_by_settings_through_the_assets(small_lake, tmp_path):
    """reader.embedded reaches the loop assets: their answers come from the evidence reader, and
    differ from the default reader's on the same contexts."""
    import shutil

    from finrag_dagster.core.tables import Lake

    lake, settings, _ = small_lake
    copy = Lake(tmp_path / "lake")
    shutil.copytree(lake.root, copy.root)
    s = settings.with_overrides(lake_dir=copy.root, reader={"embedded": "evidence"}, variants={"families": ["no_memory"]})
    with pooled_instance() as inst:
        run_range(s, end=END, decision_start=DECISION_START, instance=inst, only=["no_memory/contexts", "no_memory/reader_outputs"])
    days = [d.isoformat() for d in cal.sessions_in_range(DECISION_START, END)]
    new = copy.read("reader_outputs", dates=days, variant="no_memory")
    old = lake.read("reader_outputs", dates=days, variant="no_memory")
    assert set(new["model"]) == {EmbeddedBackend(BackendConfig(embedded="evidence")).model}
    assert set(old["model"]) == {EmbeddedBackend(BackendConfig()).model}
    assert new.height == old.height
    both = new.join(old, on=["anchor_id", "horizon"], suffix="_old")
    assert (both["signal"] != both["signal_old"]).any() or (both["valid_ids"] != both["valid_ids_old"]).any()
