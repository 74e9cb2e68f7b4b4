"""A point-in-time universe: membership intervals decide which tickers have anchors on a day."""

import datetime as dt

import polars as pl
import pytest

from finrag_dagster.core.anchors import AnchorUniverse, anchors_for_days, build_anchors, members_on
from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.evaluation.report import universe_note
from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.universe import load_membership

cal = nyse()
TICKERS = {"AAA", "BBB", "CCC", "QQQ"}


def _news(day: dt.date, tickers: list[str]) -> pl.DataFrame:
    t = cal.open_time(day).to_pydatetime() + dt.timedelta(hours=1)
    return pl.DataFrame(
        {
            "news_id": [f"N{i}" for i in range(len(tickers))],
            "ticker": tickers,
            "public_time": [t] * len(tickers),
            "time_precision": ["second"] * len(tickers),
            "title": [f"{tk} wins a large contract" for tk in tickers],
            "summary": ["s"] * len(tickers),
            "url": [f"u{i}" for i in range(len(tickers))],
        },
        schema_overrides={"public_time": pl.Datetime("us", "UTC")},
    )


def test_membership_file_is_read_and_checked(tmp_path):
    f = tmp_path / "membership.csv"
    f.write_text("ticker,start,end\nAAA,2019-01-02,\nBBB,2019-01-02,2019-06-28\nbbb,2020-01-02,\nCCC,2019-07-01,2019-12-31\n")
    m = load_membership(f, TICKERS)
    assert m.height == 4 and m["ticker"].to_list() == ["AAA", "BBB", "BBB", "CCC"]
    assert members_on(m, dt.date(2019, 3, 1)) == {"AAA", "BBB"}
    assert members_on(m, dt.date(2019, 8, 1)) == {"AAA", "CCC"}  # BBB left, CCC joined
    assert members_on(m, dt.date(2020, 3, 2)) == {"AAA", "BBB"}  # BBB re-entered
    assert members_on(None, dt.date(2020, 3, 2)) is None
    for body, msg in [
        ("ticker,start,end\nZZZ,2019-01-02,\n", "ZZZ is not in the universe"),
        ("ticker,start,end\nAAA,2019-13-02,\n", "dates must be YYYY-MM-DD"),
        ("ticker,start,end\nAAA,2019-06-02,2019-01-02\n", "is after end"),
        ("ticker,start,end\nAAA,2019-01-02,\nAAA,2019-06-02,\n", "overlap"),
        ("ticker,from\nAAA,2019-01-02\n", "lacks column"),
        ('ticker,start,end\nAAA,2019-01-02,\n"BBB,2019-01-02,\nCCC,2019-07-01,\n', "record starting at line 3"),
    ]:
        f.write_text(body)
        with pytest.raises(SourceError, match=msg):
            load_membership(f, TICKERS)


def test_anchors_only_for_members_on_the_decision_day():
    day = dt.date(2019, 8, 1)
    news = _news(day, ["AAA", "BBB", "CCC"])
    clusters = pl.DataFrame(schema={"passage_id": pl.Utf8, "ticker": pl.Utf8, "dup_cluster": pl.Utf8})
    sectors = {t: "IT" for t in TICKERS}
    every, _ = build_anchors(news, clusters, day, cal, {"QQQ"}, sectors)
    assert sorted(every["ticker"]) == ["AAA", "BBB", "CCC"]
    kept, dropped = build_anchors(news, clusters, day, cal, {"QQQ"}, sectors, members={"AAA", "CCC"})
    assert sorted(kept["ticker"]) == ["AAA", "CCC"]
    assert dropped.filter(pl.col("ticker") == "BBB")["reason"].to_list() == ["not a universe member on its decision day"]


def test_the_report_says_whether_the_universe_is_point_in_time():
    assert "survivorship" in universe_note("")
    assert "membership.csv" in universe_note("membership.csv") and "survivorship" not in universe_note("membership.csv")


def test_membership_intervals_are_inclusive_at_both_ends():
    """docs: ``start`` and ``end`` are membership dates, inclusive (schemas.MEMBERSHIP, settings.sources.membership).
    A ticker is a member on start and on end, and on neither the session before start nor the session
    after end; the anchors of those four decision days follow exactly."""
    start, end = dt.date(2019, 3, 5), dt.date(2019, 6, 26)  # a Tuesday and a Wednesday
    m = pl.DataFrame({"ticker": ["BBB", "AAA"], "start": [start, dt.date(2019, 1, 2)], "end": [end, None]})
    before, after = cal.previous_session(start), cal.next_session(end)
    assert (before, after) == (dt.date(2019, 3, 4), dt.date(2019, 6, 27))
    expect = {before: {"AAA"}, start: {"AAA", "BBB"}, end: {"AAA", "BBB"}, after: {"AAA"}}
    assert {d: members_on(m, d) for d in expect} == expect
    news = pl.concat([_news(d, ["AAA", "BBB"]).with_columns(pl.lit(d).alias("date")) for d in expect])
    clusters = pl.DataFrame(schema={"passage_id": pl.Utf8, "ticker": pl.Utf8, "dup_cluster": pl.Utf8, "date": pl.Date})
    days = [d.isoformat() for d in expect]
    out = anchors_for_days(news, clusters, days, cal, AnchorUniverse({"QQQ"}, {t: "IT" for t in TICKERS}, m), 5, dt.date(2019, 1, 2))
    assert {d: sorted(out[d][0]["ticker"]) for d in days} == {d.isoformat(): sorted(v) for d, v in expect.items()}
    assert {d: out[d][1].filter(pl.col("ticker") == "BBB").height for d in days} == {
        before.isoformat(): 1,
        start.isoformat(): 0,
        end.isoformat(): 0,
        after.isoformat(): 1,
    }
