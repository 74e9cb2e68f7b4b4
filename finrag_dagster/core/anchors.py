"""News event anchors (seed 000 §3.1, §3.3, App. A.1-A.2).

Every accepted news row of a universe ticker (the market proxy excluded) is a candidate anchor
of its decision day. Duplicates are removed as the paper does: an item whose near-duplicate
cluster was rooted by an earlier item of the same ticker, or whose URL or normalised title
repeats an earlier anchor of the same ticker on the same day, is a re-report, not a new event.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from .calendar import NY, TradingCalendar, lookback_days
from .events import classify_json
from .text import clean, title_key


def session_bucket(public_ns: np.ndarray, precision: list[str], cal: TradingCalendar) -> list[str]:
    """pre_market | regular | after_close | non_trading_day | date_only, by New York wall clock."""
    local_days = pl.Series(public_ns).cast(pl.Datetime("ns", "UTC")).dt.convert_time_zone(NY).dt.date().to_numpy().astype("datetime64[D]")
    idx = np.searchsorted(cal.sessions, local_days)
    idx_c = np.minimum(idx, len(cal.sessions) - 1)
    is_sess = cal.sessions[idx_c] == local_days
    out = []
    for i, p in enumerate(precision):
        if p == "date":
            out.append("date_only")
        elif not is_sess[i]:
            out.append("non_trading_day")
        elif public_ns[i] < cal.opens_ns[idx_c[i]]:
            out.append("pre_market")
        elif public_ns[i] < cal.closes_ns[idx_c[i]]:
            out.append("regular")
        else:
            out.append("after_close")
    return out


def day_window(clusters: pl.DataFrame, window: list[str]) -> pl.DataFrame:
    """Cluster rows (with a ``date`` column) of one day's own dedup look-back ``window`` (ISO days).

    Each day sees the same rows whichever range a run covers: a cluster root older than the day's
    look-back, but inside a longer range's, must not decide the day's anchors.
    """
    days = [dt.date.fromisoformat(d) for d in window]
    return clusters.filter(pl.col("date").is_in(days))


def members_on(membership: pl.DataFrame | None, day: dt.date) -> set[str] | None:
    """Tickers in the universe on ``day`` from the membership intervals (None when no membership
    is configured: every ticker, today's list)."""
    if membership is None:
        return None
    m = membership.filter((pl.col("start") <= day) & (pl.col("end").is_null() | (pl.col("end") >= day)))
    return set(m["ticker"].to_list())


_ANCHOR_COLUMNS = {
    "anchor_id": pl.Utf8,
    "passage_id": pl.Utf8,
    "ticker": pl.Utf8,
    "sector": pl.Utf8,
    "public_time": pl.Datetime("us", "UTC"),
    "time_precision": pl.Utf8,
    "decision_time": pl.Int64,
    "headline": pl.Utf8,
    "summary": pl.Utf8,
    "url": pl.Utf8,
    "event_type": pl.Utf8,
    "cue_counts": pl.Utf8,
    "dup_cluster": pl.Utf8,
}


@dataclass
class _DayDedup:
    """What decides whether a news row of the day is an anchor: the members on the day (None: all),
    which ticker rooted each cluster, each passage's cluster, and the (ticker, URL) and (ticker,
    title key) pairs seen so far."""

    members: set[str] | None
    root_ticker: dict
    cluster_of: dict
    seen_url: set[tuple[str, str]] = field(default_factory=set)
    seen_title: set[tuple[str, str]] = field(default_factory=set)


def _drop_reason(dd: _DayDedup, r: dict) -> tuple[str | None, str]:
    """(why news row ``r`` is no anchor, None when it is one; its dup cluster). Its URL and title
    are recorded as seen either way."""
    members = dd.members
    pid = r["news_id"]
    cl = dd.cluster_of.get(pid, pid)
    tk = r["ticker"]
    tkey = title_key(r["title"])
    reason = None
    if members is not None and tk not in members:
        reason = "not a universe member on its decision day"
    elif cl != pid and dd.root_ticker.get(cl) == tk:
        reason = f"near-duplicate of {cl}"
    elif (tk, r["url"]) in dd.seen_url:
        reason = "same URL as an earlier anchor"
    elif tkey and (tk, tkey) in dd.seen_title:
        reason = "same title as an earlier anchor"
    dd.seen_url.add((tk, r["url"]))
    if tkey:
        dd.seen_title.add((tk, tkey))
    return reason, cl


def _anchor_row(r: dict, cl: str, decision_ns: int, sectors: dict[str, str]) -> dict:
    """The anchor of news row ``r``: cleaned headline and summary, event type and cue counts, decision time."""
    tk = r["ticker"]
    etype, counts = classify_json(r["title"], r["summary"])
    return {
        "anchor_id": r["news_id"],
        "passage_id": r["news_id"],
        "ticker": tk,
        "sector": sectors.get(tk, "Unknown"),
        "public_time": r["public_time"],
        "time_precision": r["time_precision"],
        "decision_time": decision_ns,
        "headline": clean(r["title"]),
        "summary": clean(r["summary"]),
        "url": r["url"],
        "event_type": etype,
        "cue_counts": counts,
        "dup_cluster": cl,
    }


def build_anchors(
    news: pl.DataFrame,
    evidence_clusters: pl.DataFrame,
    day: dt.date,
    cal: TradingCalendar,
    benchmark: set[str],
    sectors: dict[str, str],
    members: set[str] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Anchors of decision day ``day`` and the rows dropped as duplicates (with the reason).

    ``news``: news_raw rows of the day. ``evidence_clusters``: passage_id, ticker, dup_cluster for
    the day's passages and the dedup look-back (to know which ticker rooted a cluster).
    ``members``: the tickers in the universe on ``day`` (None: all); news of other tickers is no
    anchor (dropped with the reason), so a delisted or later-added name is traded only while listed.
    """
    news = news.filter(~pl.col("ticker").is_in(sorted(benchmark))).sort(["public_time", "news_id"])
    dd = _DayDedup(
        members=members,
        root_ticker=dict(zip(evidence_clusters["passage_id"], evidence_clusters["ticker"])),
        cluster_of=dict(zip(evidence_clusters["passage_id"], evidence_clusters["dup_cluster"])),
    )
    decision_ns = int(cal.closes_ns[cal.session_index(day)])
    keep, dropped = [], []
    for r in news.iter_rows(named=True):
        reason, cl = _drop_reason(dd, r)
        if reason:
            dropped.append({"anchor_id": r["news_id"], "ticker": r["ticker"], "reason": reason})
            continue
        keep.append(_anchor_row(r, cl, decision_ns, sectors))
    df = pl.DataFrame(keep, schema=_ANCHOR_COLUMNS)
    sessions = session_bucket(df["public_time"].dt.epoch("ns").to_numpy(), df["time_precision"].to_list(), cal)
    df = df.with_columns(
        pl.col("decision_time").cast(pl.Datetime("ns", "UTC")).cast(pl.Datetime("us", "UTC")),
        pl.Series("session", sessions, dtype=pl.Utf8),
    )
    drop_df = pl.DataFrame(dropped, schema={"anchor_id": pl.Utf8, "ticker": pl.Utf8, "reason": pl.Utf8})
    return df, drop_df


@dataclass(frozen=True)
class AnchorUniverse:
    """The tickers anchors are drawn from: the market proxies (no anchors), each ticker's sector, the membership intervals (None: all, always)."""

    benchmark: set[str]
    sectors: dict[str, str]
    membership: pl.DataFrame | None = None


def anchors_for_days(
    news: pl.DataFrame,
    clusters: pl.DataFrame,
    days: list[str],
    cal: TradingCalendar,
    universe: AnchorUniverse,
    lookback_sessions: int,
    earliest: dt.date,
) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """:func:`build_anchors` for each of ``days`` (ISO), each day seeing only its own look-back.

    ``news`` and ``clusters`` carry a ``date`` column and may span more than one day (a range
    run); day D's anchors depend only on D's news and the clusters of D's own dedup window (the
    ``lookback_sessions`` sessions before D, from ``earliest``), so a range run and a day-by-day
    run give the same anchors.
    """
    benchmark, sectors, membership = universe.benchmark, universe.sectors, universe.membership
    out = {}
    for d in days:
        day = dt.date.fromisoformat(d)
        own = day_window(clusters, lookback_days(cal, d, lookback_sessions, earliest) + [d])
        day_news = news.filter(pl.col("date") == day).drop("date")
        out[d] = build_anchors(day_news, own, day, cal=cal, benchmark=benchmark, sectors=sectors, members=members_on(membership, day))
    return out


def anchor_window(s, cal: TradingCalendar, days: list[str]) -> list[str]:
    """The evidence days the anchors of ``days`` read: each day's dedup look-back, then the days."""
    return lookback_days(cal, days[0], s.evidence.dup_lookback_sessions, s.calendar.start) + days


def anchors_from_lake(s, lake, cal: TradingCalendar, days: list[str]) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """:func:`anchors_for_days` over the lake: its universe (sectors, the market proxy), the
    evidence clusters of :func:`anchor_window`, the news of ``days`` and, when configured
    (``s.sources.membership``), the membership table. ``s`` is the Settings object."""
    uni = lake.read("universe")
    sectors = dict(zip(uni["ticker"], uni["sector"]))
    bench = set(uni.filter(pl.col("is_benchmark"))["ticker"].to_list())
    clusters = lake.read("evidence", dates=anchor_window(s, cal, days), columns=["passage_id", "ticker", "dup_cluster"])
    news = lake.read("news_raw", dates=days)
    membership = lake.read("membership") if s.sources.membership else None
    return anchors_for_days(
        news,
        clusters,
        days,
        cal=cal,
        universe=AnchorUniverse(bench, sectors, membership),
        lookback_sessions=s.evidence.dup_lookback_sessions,
        earliest=s.calendar.start,
    )
