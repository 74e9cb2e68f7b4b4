"""`finrag explain`'s pieces on hand-built frames (core/explain.py): eq. 6 over the whole pool, the release day of a memory update."""

import datetime as dt

import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.events import EARNINGS
from finrag_dagster.core.explain import anchor_table, answers, disagreeing, released_on, scored_pool
from finrag_dagster.core.loop import Variant
from finrag_dagster.core.memory.source_memory import MemoryParams, SourceMemory
from finrag_dagster.core.settings import Settings

SPLITS = {
    "train": (dt.date(2019, 1, 1), dt.date(2019, 1, 31)),
    "validation": (dt.date(2019, 2, 1), dt.date(2019, 2, 28)),
    "test": (dt.date(2019, 3, 1), dt.date(2019, 3, 29)),
}


def pool():
    # six passages: five news at the top, one filing 0.05 below the fifth
    rel = [1.0, 0.9, 0.8, 0.7, 0.6, 0.55]
    fam = ["news"] * 5 + ["sec_filing"]
    return pl.DataFrame(
        {"anchor_id": ["A"] * 6, "passage_id": [f"p{i}" for i in range(6)], "rank": list(range(1, 7)), "relevance": rel, "source_family": fam}
    ).with_columns(pl.col("rank").cast(pl.Int32))


def snapshot(a_sec: float, b_news: float) -> pl.DataFrame:
    m = SourceMemory(MemoryParams(kappa=30, delta=0.2, lam=0.5))
    for h in ("1D", "3D", "5D"):
        m.add("sec_filing", EARNINGS, h, a_sec, True)
        m.add("news", EARNINGS, h, b_news, False)
    return m.to_frame()


def test_scored_pool_eq6_by_hand():
    anchor = {"anchor_id": "A", "event_type": EARNINGS}
    v = Variant("source_memory", "source_memory", 0.5)
    params = MemoryParams(kappa=30, delta=0.2, lam=0.5)
    got = scored_pool(pool(), anchor, v, snapshot(60.0, 30.0), params).sort("passage_id")
    # by hand: filings a=60 b=0: eta = 60/90, u = 61/62, adj = min(.2, .323) = .2; news a=0 b=30: eta = .5, u = 1/32, adj = max(-.2, -.234) = -.2
    adj_sec = min(0.2, 60 / 90 * (61 / 62 - 0.5))
    adj_news = max(-0.2, 0.5 * (1 / 32 - 0.5))
    assert got["memory_adj"].to_list() == pytest.approx([adj_news] * 5 + [adj_sec])
    assert got["final_score"].to_list() == pytest.approx([r + 0.5 * a for r, a in zip(pool()["relevance"], [adj_news] * 5 + [adj_sec])])
    # λ·adj: +0.1 for the filing, -0.1 for each news passage: 0.55 + 0.1 > 0.6 - 0.1, so the filing enters the top 5 at position 4
    assert adj_sec == 0.2 and adj_news == -0.2
    assert dict(zip(got["passage_id"], got["position"])) == {"p0": 1, "p1": 2, "p2": 3, "p5": 4, "p3": 5, "p4": 6}
    assert got["memory_key"].to_list() == [EARNINGS] * 6


def test_scored_pool_without_memory_is_the_static_order():
    anchor = {"anchor_id": "A", "event_type": EARNINGS}
    got = scored_pool(pool(), anchor, Variant("no_memory", "no_memory", 0.0), None, MemoryParams())
    assert got["position"].to_list() == [1, 2, 3, 4, 5, 6] and got["memory_adj"].to_list() == [0.0] * 6


def test_released_on_the_session_after_maturity_inside_the_split():
    s, cal = Settings(splits=SPLITS), nyse()
    # matured at close(Fri 2019-03-08): first in the snapshot of Mon 2019-03-11
    assert released_on(cal, s, "2019-03-07", dt.date(2019, 3, 8)) == "2019-03-11"
    # a label maturing on the split's last day would reach the next split, whose memory starts empty: never used
    assert released_on(cal, s, "2019-03-22", dt.date(2019, 3, 29)) is None
    assert released_on(cal, s, "2019-03-22", None) is None
    for d in ("2019-03-01", "2019-03-05", "2019-03-13"):
        m = cal.offset(d, 5)
        rel = released_on(cal, s, d, m)
        assert rel is None or rel > m.isoformat() > d  # never in a snapshot before its maturity


def test_answers_mark_citations_outside_the_context():
    out = pl.DataFrame(
        {
            "horizon": ["3D", "1D"],
            "signal": [1, 0],
            "cited_ids": [["N2", "N9"], []],  # the prompt's labels; N9 names no passage of the context
            "valid_ids": [["N2"], []],
            "valid_passages": [["p1"], []],
            "reason": ["r3", "r1"],
        }
    )
    got = answers(out, ["p0", "p1"])
    assert [g["horizon"] for g in got] == ["1D", "3D"]
    assert got[1]["cited_passages"] == ["p1", None] and got[1]["cited_in_context"] == [True, False]
    assert got[0]["cited_in_context"] == []


def test_report_view_picks_changed_answers_and_table2_rows_first():
    per = pl.DataFrame(
        {
            "anchor_id": ["A1", "A1", "A2", "A3", "A4", "A5"],
            "variant": ["shuffled_labels_s0", "source_memory", "shuffled_labels_s1", "source_memory", "source_memory_toe", "source_memory"],
            "twin": ["no_memory", "no_memory", "no_memory", "no_memory", "toe", "no_memory"],
            "context_changed": [True, True, True, False, True, False],
            "answer_changed": [False, False, True, False, False, False],
        }
    )
    # A2's answer changed (first); then contexts, Table 2's memory rows before the shuffles; A3 and A5 changed nothing
    assert disagreeing(per) == [("A2", "shuffled_labels_s1", "no_memory"), ("A1", "source_memory", "no_memory"), ("A4", "source_memory_toe", "toe")]
    assert disagreeing(per, 1) == [("A2", "shuffled_labels_s1", "no_memory")] and disagreeing(per.head(0)) == []


def test_anchor_table_cells():
    pool_row = {
        "rank": 1,
        "passage_id": "p0",
        "source_family": "news",
        "is_peer": False,
        "public_time": "2019-03-01T14:00:00+00:00",
        "bm25": 3.0,
        "dense": 0.5,
        "relevance": 1.0,
    }
    views = [
        {
            "variant": "source_memory",
            "pool": [{**pool_row, "memory_adj": -0.02, "final_score": 0.994, "in_context": True}],
            "answers": [{"horizon": "1D", "signal": 1}],
        },
        {
            "variant": "no_memory",
            "pool": [{**pool_row, "memory_adj": 0.0, "final_score": 1.0, "in_context": True}],
            "answers": [{"horizon": "1D", "signal": 0}],
        },
    ]
    anchor = {"anchor_id": "A", "ticker": "T", "event_type": EARNINGS, "day": "2019-03-01", "headline": "h"}
    t = anchor_table({"anchor": anchor, "variants": views, "labels": [{"horizon": "1D", "y": -1}]})
    assert t["columns"][-2:] == ["source_memory", "no_memory"]
    assert t["rows"] == [[1, "p0", "news", "2019-03-01T14:00", "3.00", "0.500", "1.000", "-0.020 → 0.994 #1*", "+0.000 → 1.000 #1*"]]
    assert "source_memory: 1D +1; no_memory: 1D 0" in t["note"] and "Labels: 1D -1" in t["note"]
