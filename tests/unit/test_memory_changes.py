"""What the memory changed against its no-memory twin (core/evaluation/changes.py), on hand-built frames."""

import datetime as dt

import polars as pl
import pytest

from finrag_dagster.core.evaluation.changes import (
    anchor_changes,
    change_cells,
    change_sentence,
    family_rows,
    reach_sentence,
    subset_metrics,
    twin_family,
    variant_pairs,
)
from finrag_dagster.core.evaluation.metrics import event_metrics
from finrag_dagster.core.families import DEFAULT_FAMILIES

D = dt.date(2019, 9, 3)


def ctx(rows):
    """contexts rows (anchor, passage, position)."""
    return pl.DataFrame(rows, schema={"anchor_id": pl.Utf8, "passage_id": pl.Utf8, "position": pl.Int32}, orient="row")


def outs(signals: dict[str, tuple[int, int, int]]):
    rows = [(a, D, "T" + a[-1], h, s) for a, sig in signals.items() for h, s in zip(("1D", "3D", "5D"), sig)]
    return pl.DataFrame(rows, schema={"anchor_id": pl.Utf8, "date": pl.Date, "ticker": pl.Utf8, "horizon": pl.Utf8, "signal": pl.Int8}, orient="row")


TWIN_CTX = ctx([("A1", p, i + 1) for i, p in enumerate("abcdef")] + [("A2", p, i + 1) for i, p in enumerate("ghijkl")] + [("A3", "m", 1)])
# A1: the same five in another order, the sixth differs (outside the top 5); A2: 'l' (6th) swapped into the top 5 for 'k'
MEM_CTX = ctx([("A1", p, i + 1) for i, p in enumerate("edcbaz")] + [("A2", p, i + 1) for i, p in enumerate("ghijlk")] + [("A3", "m", 1)])
TWIN_OUT = outs({"A1": (1, 1, 0), "A2": (0, 0, 0), "A3": (-1, -1, -1), "A5": (0, 0, 0)})
# A2: its 3D answer moved with its context; A3: an answer changed with the same context (a ToE tree can do that); A4: only here
MEM_OUT = outs({"A1": (1, 1, 0), "A2": (0, 1, 0), "A3": (-1, -1, 0), "A4": (1, 1, 1), "A5": (0, 0, 0)})


def test_anchor_changes_by_hand():
    ch = anchor_changes(MEM_CTX, TWIN_CTX, MEM_OUT, TWIN_OUT).sort("anchor_id")
    # A4 was not answered by the twin: not compared; A5 has no pool in either run: its (empty) context did not change
    assert ch["anchor_id"].to_list() == ["A1", "A2", "A3", "A5"]
    assert ch["context_changed"].to_list() == [False, True, False, False]
    assert ch["answer_changed"].to_list() == [False, True, True, False]


def test_anchor_changes_top_m_only():
    """Only the top-m set counts: with m = 6, A1's sixth passage ('f' against 'z') is a change, and A2's swap is not."""
    ch = anchor_changes(MEM_CTX, TWIN_CTX, MEM_OUT, TWIN_OUT, m=6).sort("anchor_id")
    assert ch["context_changed"].to_list() == [True, False, False, False]


def test_twins():
    assert twin_family("source_memory") == "no_memory"
    assert twin_family("top5_all_source") == "no_memory"
    assert twin_family("shuffled_labels") == "no_memory" and twin_family("shuffled_event_types") == "no_memory"
    assert twin_family("source_memory_toe") == "toe"
    assert twin_family("lora_source_memory") == "lora_no_memory"
    assert twin_family("no_memory") is None and twin_family("toe") is None
    pairs = variant_pairs(DEFAULT_FAMILIES, 2)
    assert ("source_memory_toe", "source_memory_toe", "toe") in pairs
    assert ("shuffled_labels", "shuffled_labels_s1", "no_memory") in pairs
    assert len(pairs) == 1 + 1 + 2 + 2 + 1  # source_memory, top5, 2 + 2 shuffles, source_memory_toe
    # a twin that is not run: no pair; LoRA seeds pair seed by seed
    assert variant_pairs(("source_memory_toe", "no_memory"), 2) == []
    assert variant_pairs(("lora_no_memory", "lora_source_memory"), 5, (3, 7)) == [
        ("lora_source_memory", "lora_source_memory_s3", "lora_no_memory_s3"),
        ("lora_source_memory", "lora_source_memory_s7", "lora_no_memory_s7"),
    ]


def test_subset_metrics_only_the_changed_anchors():
    labels = pl.DataFrame(
        [("T1", h, "ok", y, z) for h, y, z in (("1D", 1, 1.5), ("3D", 1, 1.2), ("5D", 0, 0.1))]
        + [("T2", h, "ok", y, z) for h, y, z in (("1D", 0, 0.2), ("3D", 1, 1.1), ("5D", -1, -2.0))]
        + [("T3", h, "pending", None, None) for h in ("1D", "3D", "5D")],
        schema={"ticker": pl.Utf8, "horizon": pl.Utf8, "status": pl.Utf8, "y": pl.Int8, "z": pl.Float64},
        orient="row",
    ).with_columns(pl.lit(D).alias("date"))
    sd = MEM_OUT.select("date", "ticker", "horizon", "signal")
    m = subset_metrics(MEM_OUT, labels, sd, ["A2", "A3"])
    assert m["n"] == 3  # A2's three horizons; A3's labels are pending
    by_hand = MEM_OUT.filter(pl.col("anchor_id") == "A2").join(labels, on=["date", "ticker", "horizon"])
    assert m["Macro-F1"] == pytest.approx(event_metrics(by_hand)["Macro-F1"])
    # A2 says (0, +1, 0) against labels (0, +1, -1): right at 1D and 3D
    assert m["1D Macro-F1"] == pytest.approx(1.0 / 3) and m["3D Macro-F1"] == pytest.approx(1.0 / 3)
    assert m["Rank IC"] != m["Rank IC"]  # one name a day: no cross-section (NaN)
    assert subset_metrics(MEM_OUT, labels, sd, [])["n"] == 0


def summary_frame(rows):
    keys = ("family", "variant", "twin", "anchors", "contexts_changed", "answers_changed", "changed", "n_matured")
    metrics = {
        f"{k} [{w}]": 0.5 for k in ("Non-neutral F1", "Macro-F1", "1D Macro-F1", "3D Macro-F1", "5D Macro-F1", "Rank IC") for w in ("variant", "twin")
    }
    return pl.DataFrame([{**dict(zip(keys, r)), **metrics} for r in rows])


def test_rows_and_sentences():
    summary = summary_frame(
        [
            ("source_memory", "source_memory", "no_memory", 1344, 15, 0, 15, 40),
            ("shuffled_labels", "shuffled_labels_s0", "no_memory", 1344, 13, 1, 13, 35),
            ("shuffled_labels", "shuffled_labels_s1", "no_memory", 1344, 17, 0, 17, 50),
            ("source_memory_toe", "source_memory_toe", "toe", 1344, 0, 0, 0, 0),
        ]
    )
    rows = family_rows(summary)
    assert [r["family"] for r in rows] == ["source_memory", "shuffled_labels", "source_memory_toe"]
    assert change_sentence(rows[0]) == "Frozen + Source Memory: 15 of 1,344 contexts changed, 0 answers, against Frozen + No Memory"
    assert change_sentence(rows[1]) == (
        "+ Shuffled feedback labels: 13–17 of 1,344 contexts changed, 0–1 answers (range over 2 seeds), against Frozen + No Memory"
    )
    cells = change_cells(rows)
    assert cells[0][:5] == ["Frozen + Source Memory", "Frozen + No Memory", "15 of 1,344", "0", "40"]
    assert cells[0][5] == "0.500 / 0.500"
    assert cells[2][5:] == ["–"] * 6  # nothing changed: no metric on an empty subset
    s = reach_sentence({"pools": 1344, "reachable_share": 0.162, "mixed_share": 0.455, "lambda": 0.3, "delta": 0.2})
    assert "16.2% of the split's 1,344 pools" in s and "λδ = 0.060" in s
    assert reach_sentence({"pools": 0}) == ""
