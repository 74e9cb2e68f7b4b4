"""ToE inside the main pipeline (issue 7 part 3): selection/expansion per anchor, eq. 13 updates from
matured residual labels, and the embedded reader's use of a principle — against hand-computed values."""

import datetime as dt
import json
import math

import numpy as np
import polars as pl
import pytest

from finrag_dagster.core.memory.experience_loop import anchor_states, choose_principles, prompt_text, toe_updates
from finrag_dagster.core.memory.experience_tree import ExperienceTree, Factor, Leaf, formula_update
from finrag_dagster.core.reader.embedded import ReaderInput, read


def unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def tree_with_one_leaf():
    leaf = Leaf("L00000", "Earnings", "the company beats estimates", unit([1, 0, 0]), {"1D": 1.5, "3D": 1.0, "5D": 0.5})
    return ExperienceTree([Factor("Earnings", ("earnings", "beat", "beats")), Factor("Legal", ("lawsuit",))]), leaf


def test_choose_principles_reuse_expand_and_cap_by_hand():
    tree, leaf = tree_with_one_leaf()
    tree.factors[0].leaves.append(leaf)
    tree._next = 1
    ids = ["a1", "a2", "a3", "a4", "a5"]
    texts = ["Earnings. Acme beats estimates.", "Earnings. Acme earnings call.", "Earnings. Acme earnings call again.",
             "Other. nothing matches here.", "Earnings. earnings something else."]
    skels = ["the company beats estimates", "the company holds earnings call", "same as a2", "nothing", "different"]
    vecs = np.stack([unit([0.9, 0.1, 0]), unit([0, 1, 0]), unit([0, 1, 0]), unit([1, 0, 0]), unit([0, 0, 1])])
    sel, principles = choose_principles(tree, ids, texts, skels, vecs, expansion_cap=2)
    rows = {r["anchor_id"]: r for r in sel.iter_rows(named=True)}
    # a1: layer 1 matches 2 of 3 keywords ("earnings", "beats"), cosine 0.9/|.| with the leaf
    cos = float(np.dot(unit([0.9, 0.1, 0]), leaf.embedding))
    rho = math.sqrt(2 / 3 * cos)
    assert rows["a1"]["outcome"] == "reused" and rows["a1"]["leaf_id"] == "L00000"
    assert rows["a1"]["rho"] == pytest.approx(rho) and rows["a1"]["score"] == pytest.approx(rho * 1.0)  # mean Q = 1.0
    assert principles["a1"].weights == (1.5, 1.0, 0.5)
    assert principles["a1"].text == prompt_text("the company beats estimates", leaf.q, ["1D", "3D", "5D"], 1.0)
    assert "1D 1.50, 3D 1.00, 5D 0.50" in principles["a1"].text
    # a2: nothing clears cosine 0.8 -> the embedded judge expands under the best factor, Q_init = q0
    assert rows["a2"]["outcome"] == "expanded" and rows["a2"]["leaf_id"] == "L00001" and rows["a2"]["q"] == [1.0, 1.0, 1.0]
    assert principles["a2"].weights == (1.0, 1.0, 1.0)
    # a3 (same state vector, later in anchor order) reuses the leaf a2 created
    assert rows["a3"]["outcome"] == "reused" and rows["a3"]["leaf_id"] == "L00001"
    # a4: no factor keyword -> nothing; a5: the factor holds expansion_cap = 2 leaves -> nothing
    assert rows["a4"]["outcome"] == "no_factor" and rows["a4"]["leaf_id"] is None and "a4" not in principles
    assert rows["a5"]["outcome"] == "factor_full" and rows["a5"]["leaf_id"] is None and rows["a5"]["factor"] == "Earnings"
    assert [x.n_recall for x in tree.leaves()] == [1, 2]


def test_toe_updates_by_hand():
    tree, leaf = tree_with_one_leaf()
    tree.factors[0].leaves.append(leaf)
    sel = pl.DataFrame({"anchor_id": ["a1", "a2", "a3", "a4"], "leaf_id": ["L00000", "L00000", "L00000", None]},
                       schema={"anchor_id": pl.Utf8, "leaf_id": pl.Utf8})
    out = pl.DataFrame({"anchor_id": ["a1", "a2", "a3", "a4"] * 2, "ticker": ["AAA", "BBB", "CCC", "DDD"] * 2,
                        "horizon": ["1D"] * 4 + ["3D"] * 4, "signal": [1, -1, 0, 1, 1, 1, 1, 1]})
    lab = pl.DataFrame({"ticker": ["AAA", "BBB", "CCC", "DDD"], "horizon": ["1D"] * 4, "status": ["ok", "ok", "ok", "ok"],
                        "epsilon": [0.02, 0.01, 0.05, -0.3]})
    up = toe_updates(tree, "2021-03-01", "1D", sel, out, lab)
    assert up["anchor_id"].to_list() == ["a1", "a2", "a3"]  # a4 used no principle
    # a1: +1 signal, eps .02 -> r = .02 at n_hit 0: 1.5 + 10 * (1 - .25) * .02 = 1.65
    q1 = formula_update(1.5, 0.02, 0)
    assert q1 == pytest.approx(1.65)
    # a2: -1 signal, eps .01 -> r = -.01 at n_hit 1
    q2 = formula_update(q1, -0.01, 1)
    assert up["q_after"].to_list() == [pytest.approx(q1), pytest.approx(q2), pytest.approx(q2)]
    assert up["reward"].to_list() == [pytest.approx(0.02), pytest.approx(-0.01), 0.0]
    assert up["outcome"].to_list() == ["applied", "applied", "neutral_signal"]
    assert leaf.q == {"1D": pytest.approx(q2), "3D": 1.0, "5D": 0.5} and leaf.n_hit == 2
    assert up["decision_day"].to_list() == [dt.date(2021, 3, 1)] * 3
    # a label that could not be computed gives no update
    lab2 = lab.with_columns(pl.lit("insufficient_history").alias("status"), pl.lit(None, dtype=pl.Float64).alias("epsilon"))
    up2 = toe_updates(tree, "2021-03-01", "1D", sel, out, lab2)
    assert set(up2["outcome"]) == {"label_unavailable"} and (up2["q_before"] == up2["q_after"]).all()
    with pytest.raises(ValueError, match="not in the tree"):
        toe_updates(tree, "2021-03-01", "1D", sel.with_columns(pl.lit("L99999").alias("leaf_id")), out, lab)


def test_anchor_states_mask_the_company_like_the_induction():
    a = pl.DataFrame({"anchor_id": ["b", "a"], "ticker": ["ACME", "ACME"], "event_type": ["Earnings & Guidance"] * 2,
                      "headline": ["Acme Corp beats Q3 estimates by 12%", "ACME cuts guidance"], "summary": ["", ""]})
    ids, texts, skels = anchor_states(a, {"ACME": ["Acme Corp"]})
    assert ids == ["a", "b"]
    assert skels == ["the company cuts guidance", "the company beats QN estimates by N"]
    assert texts[1].startswith("Earnings & Guidance. Acme Corp beats")


def test_embedded_reader_weighs_the_anchor_by_the_principles_utility():
    inp = ReaderInput("Acme beats estimates and raises guidance on record growth", "", "Earnings & Guidance", (), "", "2021-03-01")
    base = json.loads(read(inp))["signals"]
    assert base["1D"]["signal"] == 1
    same = json.loads(read(ReaderInput(inp.headline, inp.summary, inp.event_type, inp.evidence, inp.risk_state, inp.prediction_day, (1.0, 1.0, 1.0))))
    assert same["signals"] == base  # Q = q0 everywhere: the baseline, unchanged
    off = json.loads(read(ReaderInput(inp.headline, inp.summary, inp.event_type, inp.evidence, inp.risk_state, inp.prediction_day, (0.0, 1.0, 2.0))))
    assert off["signals"]["1D"]["signal"] == 0  # a perspective that never paid off at 1D: the anchor no longer counts there
    assert "+0.00" in off["signals"]["1D"]["reason"]
    assert off["signals"]["5D"]["signal"] == 1
    with pytest.raises(ValueError, match="one weight per horizon"):
        read(ReaderInput(inp.headline, "", "", (), "", "", (1.0,)))
