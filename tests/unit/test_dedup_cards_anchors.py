"""Near-duplicate clusters, market-context cards and anchor construction."""

import datetime as dt
import json

import numpy as np
import pandas as pd
import polars as pl

from finrag_dagster.core.anchors import build_anchors, session_bucket
from finrag_dagster.core.calendar import date_only_public_time, nyse
from finrag_dagster.core.context_card import build_cards
from finrag_dagster.core.dedup import ClusterIndex, DupItem, assign_clusters
from finrag_dagster.core.settings import CardSettings

cal = nyse()
STORY = "Acme Corp reports record quarterly revenue of 4.2 billion dollars and raises full year guidance on strong demand"


def test_rewording_joins_the_earliest_cluster_and_unrelated_text_does_not():
    items = [
        DupItem("a", (1, "a"), STORY),
        DupItem("b", (2, "b"), STORY + " says analysts"),
        DupItem("c", (3, "c"), "Regulators open an antitrust investigation into the widget market in Europe today"),
    ]
    got = assign_clusters([], items, threshold=0.7)
    assert got == {"a": "a", "b": "a", "c": "c"}


def test_a_later_passage_never_changes_an_earlier_cluster():
    early = [DupItem("a", (1, "a"), STORY), DupItem("c", (3, "c"), "Completely different text about dividends and buybacks at Zeta Inc")]
    alone = assign_clusters([], early, threshold=0.7)
    with_future = assign_clusters([], early + [DupItem("z", (9, "z"), STORY)], threshold=0.7)
    assert {k: with_future[k] for k in alone} == alone
    assert with_future["z"] == "a"


def test_history_clusters_are_inherited_and_eviction_forgets():
    idx = ClusterIndex(0.7, 128)
    idx.add_history([DupItem("old", (1, "old"), STORY, "root0")])
    assert idx.assign([DupItem("new", (5, "new"), STORY)]) == {"new": "root0"}
    idx.evict_before((6, ""))
    assert len(idx) == 0
    assert idx.assign([DupItem("n2", (7, "n2"), STORY)]) == {"n2": "n2"}


def _returns(rows):
    return pl.DataFrame(
        rows,
        schema={"ticker": pl.Utf8, "ret_1d": pl.Float64, "ret_5d": pl.Float64, "ret_20d": pl.Float64, "vol_20d": pl.Float64, "vol_252d": pl.Float64},
        orient="row",
    )


def test_card_states_follow_the_thresholds():
    s = CardSettings()
    r = _returns([("QQQ", 0.001, 0.01, 0.03, 0.02, 0.01), ("AAA", 0.021, 0.068, 0.09, 0.02, 0.02), ("BBB", -0.01, -0.02, -0.001, 0.01, 0.02)])
    cards = {c["ticker"]: c for c in build_cards(r, "QQQ", "2020-04-30", s).to_dicts()}
    a, b = cards["AAA"], cards["BBB"]
    assert a["momentum_state"] == "strong positive momentum" and b["momentum_state"] == "flat"
    assert a["relative_state"].startswith("outperformed") and b["relative_state"].startswith("underperformed")
    assert a["rel_5d"] == 0.068 - 0.01
    assert a["market_trend"] == "uptrend with elevated volatility"
    assert "normal realized volatility for AAA" in a["risk_state"] and "calm realized volatility for BBB" in b["risk_state"]
    assert "prior 1D +2.10%" in a["card_text"] and "as_of: 2020-04-30 close" in a["card_text"]
    assert "QQQ" not in cards


def test_card_without_history_says_unknown():
    r = _returns([("QQQ", None, None, None, None, None), ("AAA", 0.01, None, None, None, None)])
    c = build_cards(r, "QQQ", "2020-01-02", CardSettings()).row(0, named=True)
    assert c["momentum_state"] == "unknown" and c["risk_state"].startswith("unknown") and "n/a" in c["card_text"]


def test_session_buckets():
    ts = (
        pd.to_datetime(["2021-03-03 12:00", "2021-03-03 15:00", "2021-03-03 21:30", "2021-03-06 15:00", "2021-03-03 05:00"], utc=True)
        .as_unit("ns")
        .asi8
    )
    got = session_bucket(np.asarray(ts), ["second", "second", "second", "second", "date"], cal)
    assert got == ["pre_market", "regular", "after_close", "non_trading_day", "date_only"]


def _news(rows):
    return pl.DataFrame(
        rows,
        schema={
            "news_id": pl.Utf8,
            "ticker": pl.Utf8,
            "public_time": pl.Datetime("us", "UTC"),
            "time_precision": pl.Utf8,
            "title": pl.Utf8,
            "summary": pl.Utf8,
            "url": pl.Utf8,
        },
        orient="row",
    )


def test_anchors_drop_re_reports_keep_other_tickers_and_benchmark_is_not_an_anchor():
    t = lambda s: pd.Timestamp(s, tz="America/New_York").tz_convert("UTC").to_pydatetime()  # noqa: E731
    news = _news(
        [
            ("n1", "AAA", t("2021-03-03 10:00"), "second", "AAA beats EPS, raises guidance", "Revenue up", "u1"),
            ("n2", "AAA", t("2021-03-03 11:00"), "second", "AAA beats EPS and raises guidance", "Revenue up", "u2"),
            ("n3", "BBB", t("2021-03-03 11:00"), "second", "AAA beats EPS, raises guidance", "Revenue up", "u1"),
            ("n4", "AAA", t("2021-03-03 12:00"), "second", "AAA beats EPS, raises guidance", "Other words", "u4"),
            ("n5", "QQQ", t("2021-03-03 12:00"), "second", "Nasdaq rallies", "", "u5"),
            ("n6", "AAA", date_only_public_time("2021-03-02").to_pydatetime(), "date", "AAA CEO resigns", "", "u6"),
        ]
    )
    clusters = pl.DataFrame(
        {"passage_id": ["n1", "n2", "n3", "n4", "n6"], "ticker": ["AAA", "AAA", "BBB", "AAA", "AAA"], "dup_cluster": ["n1", "n1", "n1", "n4", "n6"]}
    )
    a, dropped = build_anchors(news, clusters, dt.date(2021, 3, 3), cal, {"QQQ"}, {"AAA": "IT", "BBB": "IT"})
    assert a["anchor_id"].to_list() == ["n6", "n1", "n3"]
    assert dict(zip(dropped["anchor_id"], dropped["reason"])) == {"n2": "near-duplicate of n1", "n4": "same title as an earlier anchor"}
    row = a.filter(pl.col("anchor_id") == "n1").row(0, named=True)
    assert (
        row["event_type"] == "Earnings & Guidance" and json.loads(row["cue_counts"])["Earnings & Guidance"] == 4
    )  # eps, raises guidance, guidance, revenue
    assert row["decision_time"] == cal.close_time(dt.date(2021, 3, 3)).to_pydatetime()
    assert a.filter(pl.col("anchor_id") == "n6")["session"][0] == "date_only"
