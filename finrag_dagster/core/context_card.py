"""The pre-decision market-context card (seed 000 App. B).

Built from adjusted closes up to and including close(D) only: prior 1D/5D/20D stock returns,
the same for the market proxy, relative performance, realised-volatility state and the market
trend, each mapped to words by fixed thresholds (CardSettings). No post-decision data exists in
its inputs: the ``returns`` model it reads is backward-looking.
"""

from __future__ import annotations

import math

import polars as pl

from .settings import CardSettings
from .storage.lake import rows_on


def _pct(x: float | None) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x * 100:+.2f}%"


def _ok(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


def momentum_state(ret_20d: float | None, s: CardSettings) -> str:
    if not _ok(ret_20d):
        return "unknown"
    if ret_20d >= s.momentum_strong:
        return "strong positive momentum"
    if ret_20d >= s.momentum_mild:
        return "mild positive momentum"
    if ret_20d <= -s.momentum_strong:
        return "strong negative momentum"
    if ret_20d <= -s.momentum_mild:
        return "mild negative momentum"
    return "flat"


def relative_state(rel_5d: float | None, s: CardSettings) -> str:
    if not _ok(rel_5d):
        return "unknown"
    if rel_5d > s.relative_band:
        return "outperformed the market proxy over the prior 5 days"
    if rel_5d < -s.relative_band:
        return "underperformed the market proxy over the prior 5 days"
    return "in line with the market proxy over the prior 5 days"


def vol_state(v20: float | None, v252: float | None, s: CardSettings) -> str:
    if not (_ok(v20) and _ok(v252)) or v252 <= 0:
        return "unknown"
    ratio = v20 / v252
    if ratio >= s.vol_elevated_ratio:
        return "elevated"
    if ratio <= s.vol_calm_ratio:
        return "calm"
    return "normal"


def market_trend(mkt_20d: float | None, mkt_v20: float | None, mkt_v252: float | None, s: CardSettings) -> str:
    if not _ok(mkt_20d):
        return "unknown"
    direction = "uptrend" if mkt_20d > s.trend_band else "downtrend" if mkt_20d < -s.trend_band else "range-bound"
    vs = vol_state(mkt_v20, mkt_v252, s)
    return f"{direction} with {vs} volatility" if vs != "unknown" else direction


CARD_SCHEMA = {
    "ticker": pl.Utf8,
    **{
        k: pl.Float64
        for k in (
            "ret_1d",
            "ret_5d",
            "ret_20d",
            "mkt_ret_1d",
            "mkt_ret_5d",
            "mkt_ret_20d",
            "rel_5d",
            "rel_20d",
            "vol_20d",
            "vol_252d",
            "mkt_vol_20d",
            "mkt_vol_252d",
        )
    },
    "momentum_state": pl.Utf8,
    "relative_state": pl.Utf8,
    "risk_state": pl.Utf8,
    "market_trend": pl.Utf8,
    "card_text": pl.Utf8,
}


def empty_cards() -> pl.DataFrame:
    return pl.DataFrame(schema=CARD_SCHEMA)


def build_cards(returns_day: pl.DataFrame, market: str, as_of, s: CardSettings) -> pl.DataFrame:
    """One card per ticker of the day's backward-looking returns (market proxy row required)."""
    m = returns_day.filter(pl.col("ticker") == market)
    if m.height != 1:
        raise ValueError(f"context cards need exactly one {market} row in returns for {as_of}, got {m.height}")
    mk = m.row(0, named=True)
    rows = []
    for r in returns_day.filter(pl.col("ticker") != market).iter_rows(named=True):
        rel5 = r["ret_5d"] - mk["ret_5d"] if _ok(r["ret_5d"]) and _ok(mk["ret_5d"]) else None
        rel20 = r["ret_20d"] - mk["ret_20d"] if _ok(r["ret_20d"]) and _ok(mk["ret_20d"]) else None
        mom = momentum_state(r["ret_20d"], s)
        rel = relative_state(rel5, s)
        risk_stock = vol_state(r["vol_20d"], r["vol_252d"], s)
        risk_mkt = vol_state(mk["vol_20d"], mk["vol_252d"], s)
        trend = market_trend(mk["ret_20d"], mk["vol_20d"], mk["vol_252d"], s)
        risk = f"{risk_stock} realized volatility for {r['ticker']}, {risk_mkt} for {market}"
        text = "\n".join(
            [
                f"as_of: {as_of} close",
                f"market_proxy: {market}",
                f"{r['ticker']} recent return: prior 1D {_pct(r['ret_1d'])}, prior 5D {_pct(r['ret_5d'])}, prior 20D {_pct(r['ret_20d'])} ({mom})",
                f"relative performance: {r['ticker']} {rel} ({_pct(rel5)})",
                f"risk state: {risk}",
                f"market trend: {market} {trend} (prior 20D {_pct(mk['ret_20d'])})",
            ]
        )
        rows.append(
            {
                "ticker": r["ticker"],
                "ret_1d": r["ret_1d"],
                "ret_5d": r["ret_5d"],
                "ret_20d": r["ret_20d"],
                "mkt_ret_1d": mk["ret_1d"],
                "mkt_ret_5d": mk["ret_5d"],
                "mkt_ret_20d": mk["ret_20d"],
                "rel_5d": rel5,
                "rel_20d": rel20,
                "vol_20d": r["vol_20d"],
                "vol_252d": r["vol_252d"],
                "mkt_vol_20d": mk["vol_20d"],
                "mkt_vol_252d": mk["vol_252d"],
                "momentum_state": mom,
                "relative_state": rel,
                "risk_state": risk,
                "market_trend": trend,
                "card_text": text,
            }
        )
    return pl.DataFrame(rows, schema=CARD_SCHEMA)


def write_cards(s, lake, cal, days: list[str]) -> tuple[dict[str, int], list[str], pl.DataFrame | None]:
    """The cards of ``days`` from the lake's ``returns``, one partition per day, stamped ``as_of``
    close(D). Returns (rows per day, the days without a market bar (their cards are empty), the
    first non-empty day's cards). ``s`` is the Settings object."""
    market = s.market_ticker
    rets = lake.read("returns", dates=days)
    counts, missing, first = {}, [], None
    for d in days:
        r = rows_on(rets, d)
        if r.filter(pl.col("ticker") == market).height != 1:
            missing.append(d)
            cards = empty_cards()
        else:
            cards = build_cards(r, market, d, s.cards)
        cards = cards.with_columns(pl.lit(cal.close_time(d)).dt.cast_time_unit("us").alias("as_of"))
        _, counts[d] = lake.write("context_cards", cards, date=d)
        if first is None and cards.height:
            first = cards
    return counts, missing, first
