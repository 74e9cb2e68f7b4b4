"""The LoRA reader's training examples from a real (small) lake: the frozen reader's prompt and
static retrieval, and labels matured before the cut-off only."""

import datetime as dt

import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.lora_train import split_examples
from finrag_dagster.core.reader.backends import BackendConfig, make_backend
from finrag_dagster.core.settings import SPLIT_NAMES
from finrag_dagster.core.splits import split_bounds


def test_lora_examples_are_the_frozen_readers_prompts_with_matured_labels(small_lake):
    lake, s, _ = small_lake
    cal = nyse()
    b = dict(zip(SPLIT_NAMES, split_bounds(s, cal)))
    # the small lake's decisions start in the validation split: it stands in for the train split here
    split, cutoff = b["validation"], b["test"][0]
    ex = split_examples(s, lake, split, cutoff)
    assert len(ex) > 10
    # same prompt (context format, static retrieval, card) as the frozen reader's no_memory variant:
    # the cache key recomputed from the example's prompt is the stored prompt_hash of that anchor
    cfg = BackendConfig.from_settings(s)
    be = make_backend(cfg)
    days = sorted({e.day for e in ex})
    out = lake.read("reader_outputs", dates=days, variant="no_memory", columns=["anchor_id", "prompt_hash"]).unique("anchor_id")
    stored = dict(zip(out["anchor_id"], out["prompt_hash"]))
    assert all(e.prompt.key(be.name, be.model, cfg.decoding()) == stored[e.anchor_id] for e in ex)
    # targets are the lake's labels, every one matured before the cut-off
    lab = lake.read("labels", dates=days).filter(pl.col("status") == "ok")
    anchors = lake.read("anchors", dates=days).select("anchor_id", "date", "ticker")
    j = anchors.join(lab, on=["date", "ticker"])
    for e in ex:
        rows = j.filter(pl.col("anchor_id") == e.anchor_id)
        assert {h: y for h, y in zip(rows["horizon"], rows["y"])} == e.targets
        assert (rows["maturity_day"] < dt.date.fromisoformat(cutoff)).all()
    # an earlier cut-off drops the anchors whose labels mature later (a planted late label cannot leak)
    early = b["validation"][1]
    ex2 = split_examples(s, lake, split, early)
    assert 0 < len(ex2) < len(ex)
    late = j.filter(pl.col("maturity_day") >= dt.date.fromisoformat(early))["anchor_id"].to_list()
    assert not set(late) & {e.anchor_id for e in ex2}


def test_tables_2_and_4_carry_the_lora_rows_as_mean_and_std_over_the_seeds_read(small_lake, tmp_path):
    """Two LoRA seeds' outputs planted in a copy of the lake (no_memory's, one seed's signals
    flipped): Tables 2 and 4 show "LoRA + No Memory" as their mean ± std; a seed that was not read
    (s4) is left out, not counted as missing data."""
    import shutil

    import numpy as np

    from finrag_dagster.core.evaluation.tables import evaluate, variant_metrics
    from finrag_dagster.core.splits import split_days
    from finrag_dagster.core.tables import Lake

    src, s, _ = small_lake
    shutil.copytree(src.root, tmp_path / "lake")
    lake = Lake(tmp_path / "lake")
    s = s.with_overrides(lake_dir=lake.root, variants={"families": ["no_memory", "lora_no_memory"]}, lora={"seeds": (0, 1, 4)})
    cal = nyse()
    days = [d for d in lake.materialized_dates("reader_outputs", variant="no_memory")]

    def flip(df, k):  # seed k > 0 flips every third signal
        return (
            df.with_columns(pl.when(pl.int_range(pl.len()) % 3 == 0).then(-pl.col("signal")).otherwise(pl.col("signal")).alias("signal")) if k else df
        )

    for d in days:
        out = lake.read("reader_outputs", dates=[d], variant="no_memory").drop("date", "variant")
        for k in (0, 1):
            lake.write("reader_outputs", flip(out, k), variant=f"lora_no_memory_s{k}", date=d)
        sd = lake.read("stock_day_signals", dates=[d]).drop("date")
        nm = sd.filter(pl.col("variant") == "no_memory")
        lake.write(
            "stock_day_signals", pl.concat([sd] + [flip(nm, k).with_columns(pl.lit(f"lora_no_memory_s{k}").alias("variant")) for k in (0, 1)]), date=d
        )
    ev, daily = evaluate(s, lake, cal)
    test_days = split_days(s, cal, lake, "test")
    per_seed = [variant_metrics(lake, f"lora_no_memory_s{k}", test_days) for k in (0, 1)]
    t2 = ev.filter((pl.col("table") == "Table 2") & (pl.col("split") == "test") & (pl.col("row") == "LoRA + No Memory"))
    mf = t2.filter(pl.col("metric") == "Macro-F1")
    assert mf["value"][0] == pytest.approx(np.mean([m["Macro-F1"] for m in per_seed]))
    assert mf["std"][0] == pytest.approx(np.std([m["Macro-F1"] for m in per_seed], ddof=1)) and mf["std"][0] > 0
    t4 = ev.filter((pl.col("table") == "Table 4") & (pl.col("split") == "test") & (pl.col("row") == "LoRA + No Memory"))
    assert set(t4["metric"]) >= {"Sharpe", "Turnover"} and t4["std"].null_count() == 0
    assert ev.filter(pl.col("row") == "Frozen + No Memory").height  # the frozen rows stay
    # Figure 2 draws the LoRA family as the seeds' mean daily book
    from finrag_dagster.core.evaluation.tables import portfolio_books

    books = portfolio_books(lake, ["lora_no_memory_s0", "lora_no_memory_s1"], test_days, s.market_ticker, lake.read("universe")["ticker"].to_list())
    line = daily.filter((pl.col("strategy") == "LoRA + No Memory") & (pl.col("split") == "test")).sort("date")
    want = (books["lora_no_memory_s0"]["net"] + books["lora_no_memory_s1"]["net"]) / 2
    assert line.height == want.len() and line["net"].to_list() == pytest.approx(want.to_list())
