"""Source memory against hand-computed values (seed 000 §3.5, App. B, App. C, Table 1)."""

import datetime as dt

import polars as pl
import pytest

from finrag_dagster.core.memory.feedback import CreditRule, build_feedback, label_frequencies, shuffle_labels
from finrag_dagster.core.memory.source_memory import (
    MemoryParams,
    SourceMemory,
    adjustment,
    class_weights,
    rerank,
    shuffled_event_type,
    u_hat,
)

E = "Earnings & Guidance"


def test_posterior_shrinkage_and_clip_by_hand():
    assert u_hat(0, 0) == 0.5
    assert u_hat(3, 1) == pytest.approx(4 / 6)
    # n = 4, eta = 4/34, adj = eta * (2/3 - 1/2)
    assert adjustment(3, 1, 30, 0.2) == pytest.approx((4 / 34) * (4 / 6 - 0.5))
    assert adjustment(1, 3, 30, 0.2) == pytest.approx(-(4 / 34) * (4 / 6 - 0.5))
    # the largest possible memory term is lambda * delta = 0.3 * 0.2 = 0.06
    assert 0.3 * adjustment(1e9, 0, 30, 0.2) == pytest.approx(0.06)
    assert 0.3 * adjustment(0, 1e9, 30, 0.2) == pytest.approx(-0.06)


def test_class_balanced_weights_from_table_1_validation_proportions():
    # seed 000 Table 1, validation row: 1D +1/0/-1 = 18.4/63.7/17.9, 5D = 20.7/58.6/20.7
    w = class_weights({"1D": {1: 0.184, 0: 0.637, -1: 0.179}, "5D": {1: 0.207, 0: 0.586, -1: 0.207}})
    assert w["1D"][1] == pytest.approx(1 / (3 * 0.184)) == pytest.approx(1.8116, abs=1e-4)
    assert w["1D"][0] == pytest.approx(0.5233, abs=1e-4)
    assert w["1D"][-1] == pytest.approx(1.8622, abs=1e-4)
    assert w["5D"][0] == pytest.approx(1 / (3 * 0.586))
    # expected weight under the validation distribution is one
    assert sum(p * w["1D"][y] for y, p in {1: 0.184, 0: 0.637, -1: 0.179}.items()) == pytest.approx(1.0)


def _outputs(rows):
    """rows: (anchor, ticker, horizon, signal, families)"""
    return pl.DataFrame(
        {
            "anchor_id": [r[0] for r in rows],
            "ticker": [r[1] for r in rows],
            "event_type": [E] * len(rows),
            "horizon": [r[2] for r in rows],
            "signal": [r[3] for r in rows],
            "cited_families": [r[4] for r in rows],
        },
        schema_overrides={"signal": pl.Int8, "cited_families": pl.List(pl.Utf8)},
    )


def _labels(rows, day=dt.date(2020, 5, 1)):
    return pl.DataFrame(
        {
            "date": [day] * len(rows),
            "ticker": [r[0] for r in rows],
            "horizon": [r[1] for r in rows],
            "maturity_day": [r[2] for r in rows],
            "status": [r[3] for r in rows],
            "y": [r[4] for r in rows],
            "z": [float(r[4] or 0) * 1.5 for r in rows],
        },
        schema_overrides={"y": pl.Int8},
    )


def test_feedback_credit_matches_the_app_b_example():
    w = {"3D": {1: 1.8, 0: 0.5, -1: 1.9}}
    out = _outputs(
        [
            ("a1", "AAPL", "3D", 1, ["sec_filing"]),  # correct, one SEC passage cited -> SEC a += w_+1
            ("a2", "MSFT", "3D", 1, ["news", "sec_filing", "news"]),  # correct, both families -> 0.5 w each
            ("a3", "NVDA", "3D", -1, ["news"]),  # wrong -> news b += w_y (y = +1)
            ("a4", "AMZN", "3D", 0, []),  # no valid citation -> no update
        ]
    )
    lab = _labels([(t, "3D", dt.date(2020, 5, 6), "ok", 1) for t in ("AAPL", "MSFT", "NVDA", "AMZN")])
    fb = build_feedback(out, lab, pl.DataFrame(), dt.date(2020, 5, 6), w, {a: E for a in ("a1", "a2", "a3", "a4")})
    assert dict(zip(fb["anchor_id"], fb["outcome"])) == {"a1": "applied", "a2": "applied", "a3": "applied", "a4": "no_valid_citation"}
    m = SourceMemory(MemoryParams())
    assert m.apply(fb) == 4  # a1: 1 family, a2: 2, a3: 1
    assert m.cell("sec_filing", E, "3D") == (pytest.approx(1.8 + 0.9), 0.0)
    assert m.cell("news", E, "3D") == (pytest.approx(0.9), pytest.approx(1.8))
    assert m.cell("news", E, "1D") == (0.0, 0.0)


def test_feedback_never_comes_before_maturity_and_unavailable_labels_do_nothing():
    out = _outputs([("a1", "AAPL", "1D", 1, ["news"]), ("a1", "AAPL", "5D", 1, ["news"]), ("a2", "MSFT", "1D", 0, ["news"])])
    lab = _labels(
        [
            ("AAPL", "1D", dt.date(2020, 5, 4), "ok", 1),
            ("AAPL", "5D", dt.date(2020, 5, 8), "pending", None),
            ("MSFT", "1D", dt.date(2020, 5, 4), "insufficient_history", None),
        ]
    )
    fb = build_feedback(out, lab, pl.DataFrame(), dt.date(2020, 5, 4), {"1D": {1: 2.0, 0: 0.5, -1: 2.0}}, {"a1": E, "a2": E})
    assert sorted(zip(fb["anchor_id"], fb["horizon"], fb["outcome"])) == [("a1", "1D", "applied"), ("a2", "1D", "label_unavailable")]
    assert fb.filter(pl.col("anchor_id") == "a1")["weight"][0] == 2.0
    # a label still pending (close(D+h) not in prices, e.g. the data ends) gives no feedback at all
    pend = _labels([("AAPL", "1D", dt.date(2020, 5, 4), "pending", None)])
    assert build_feedback(out, pend, pl.DataFrame(), dt.date(2020, 5, 4), {}, {"a1": E}).height == 0


def test_top5_all_source_credits_every_family_in_the_context():
    out = _outputs([("a1", "AAPL", "1D", 1, [])])  # nothing cited
    ctx = pl.DataFrame({"anchor_id": ["a1", "a1"], "source_family": ["news", "sec_filing"]})
    lab = _labels([("AAPL", "1D", dt.date(2020, 5, 4), "ok", 1)])
    fb = build_feedback(out, lab, ctx, dt.date(2020, 5, 4), {"1D": {1: 1.0}}, {"a1": E}, CreditRule("top5"))
    assert fb["families"][0].to_list() == ["news", "sec_filing"] and fb["applied"][0]


def test_rerank_moves_a_useful_family_up_but_only_by_lambda_delta():
    cands = pl.DataFrame(
        {
            "anchor_id": ["a"] * 3,
            "passage_id": ["n1", "f1", "n2"],
            "source_family": ["news", "sec_filing", "news"],
            "relevance": [0.80, 0.76, 0.50],
            "rank": [1, 2, 3],
        }
    )
    m = SourceMemory(MemoryParams())
    for h in ("1D", "3D", "5D"):
        m.add("sec_filing", E, h, 1e6, True)
        m.add("news", E, h, 1e6, False)
    ctx = rerank(cands, {"a": E}, m, 0.3, 2)
    assert ctx["passage_id"].to_list() == ["f1", "n1"]  # 0.76 + 0.06 > 0.80 - 0.06
    assert ctx["final_score"].to_list() == pytest.approx([0.82, 0.74])
    static = rerank(cands, {"a": E}, m, 0.0, 2)
    assert static["passage_id"].to_list() == ["n1", "f1"]


def test_label_frequencies_and_shuffles_are_seeded():
    lab = _labels([(t, "1D", dt.date(2020, 5, 4), "ok", y) for t, y in zip("ABCDEFGH", [1, 0, 0, -1, 0, 1, 0, 0])])
    assert label_frequencies(lab)["1D"] == {-1: 1 / 8, 0: 5 / 8, 1: 2 / 8}
    s1, s2 = shuffle_labels(lab, 1), shuffle_labels(lab, 1)
    assert s1.equals(s2) and sorted(s1["y"].to_list()) == sorted(lab["y"].to_list())
    assert not shuffle_labels(lab, 2).sort("ticker")["y"].equals(shuffle_labels(lab, 3).sort("ticker")["y"])
    assert shuffled_event_type("x", 0) == shuffled_event_type("x", 0)
    assert len({shuffled_event_type(f"a{i}", 0) for i in range(50)}) == 5
