"""The LoRA reader's training examples from a real (small) lake: the frozen reader's prompt and
static retrieval, and labels matured before the cut-off only."""

import datetime as dt

import polars as pl

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
