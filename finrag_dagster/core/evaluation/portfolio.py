"""The fixed portfolio diagnostic (seed 000 §4.4, eqs 7-9; docs/method.md §7).

On each decision day t the sleeve v_t holds the names with a positive 3D stock-day signal, best
first (ties: higher mean static relevance, then ticker), up to K = 10 at 1/K each, the rest in
cash. The portfolio held on day t is w_t = (v_{t−1} + v_{t−2} + v_{t−3}) / 3, so a decision at
close(D) first earns close(D)→close(D+1). Turnover is one-way against the drifted weights,
TO_t = ½ Σ_i |w_{i,t} − w̃_{i,t}| with cash counted as an asset (buying a fully-invested book from
cash is a turnover of 1); net_t = gross_t − 0.001·TO_t. Benchmarks: QQQ buy-and-hold and the
equal-weight universe rebalanced daily under the same cost rule.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

CASH = "__cash__"


def sleeves(signals: pl.DataFrame, k: int = 10) -> dict:
    """{date: {ticker: weight}} from 3D stock-day signals (date, ticker, signal, mean_relevance)."""
    out = {}
    for (d,), g in signals.group_by(["date"]):
        pos = g.filter(pl.col("signal") > 0).with_columns(pl.col("mean_relevance").fill_null(0.0))
        pos = pos.sort(["signal", "mean_relevance", "ticker"], descending=[True, True, False]).head(k)
        out[d] = {t: 1.0 / k for t in pos["ticker"].to_list()}
    return out


def _drift(w: dict, r: dict) -> dict:
    """Weights after one day of returns (cash earns 0)."""
    grown = {i: wi * (1.0 + (r.get(i, 0.0) if i != CASH else 0.0)) for i, wi in w.items()}
    tot = sum(grown.values())
    return {i: v / tot for i, v in grown.items()} if tot > 0 else grown


def _with_cash(w: dict) -> dict:
    out = {i: v for i, v in w.items() if v != 0}
    out[CASH] = max(0.0, 1.0 - sum(out.values()))
    return out


def run_book(targets: dict, returns: dict, days: list, cost: float = 0.001) -> pl.DataFrame:
    """Daily gross/net returns and turnover of a book that rebalances to ``targets[t]`` each day t.

    ``returns[t]``: {ticker: close(t−1)→close(t) return}. The first day trades from all cash.
    """
    prev_w = {CASH: 1.0}
    prev_r: dict = {}
    rows = []
    for t in days:
        drifted = _drift(prev_w, prev_r) if prev_r else prev_w
        w = _with_cash(targets.get(t, {}))
        names = sorted(set(w) | set(drifted))  # a fixed summation order (set order follows string hashing, which varies by process)
        to = 0.5 * sum(abs(w.get(i, 0.0) - drifted.get(i, 0.0)) for i in names)
        r = returns.get(t, {})
        gross = sum(wi * r.get(i, 0.0) for i, wi in w.items() if i != CASH)
        rows.append({"date": t, "gross": gross, "turnover": to, "net": gross - cost * to, "n_names": sum(1 for i in w if i != CASH)})
        prev_w, prev_r = w, r
    return pl.DataFrame(rows, schema={"date": pl.Date, "gross": pl.Float64, "turnover": pl.Float64, "net": pl.Float64, "n_names": pl.Int64})


def strategy_targets(sl: dict, days: list, hold: int = 3) -> dict:
    """w_t = mean of the sleeves decided on the ``hold`` sessions before t (eq. 7)."""
    out = {}
    for i, t in enumerate(days):
        w: dict = {}
        for j in range(1, hold + 1):
            if i - j < 0:
                continue
            for tk, x in sl.get(days[i - j], {}).items():
                w[tk] = w.get(tk, 0.0) + x / hold
        out[t] = w
    return out


def equal_weight_targets(returns: dict, days: list, universe: list[str]) -> dict:
    """1/N of the universe names that trade on t (daily rebalanced)."""
    out = {}
    for t in days:
        live = [u for u in universe if u in returns.get(t, {})]
        out[t] = {u: 1.0 / len(live) for u in live} if live else {}
    return out


def buy_and_hold(returns: dict, days: list, ticker: str) -> pl.DataFrame:
    """A buy-and-hold position: no turnover after the entry (zero cost, as in Table 4)."""
    rows = [
        {"date": t, "gross": returns.get(t, {}).get(ticker, 0.0), "turnover": 0.0, "net": returns.get(t, {}).get(ticker, 0.0), "n_names": 1}
        for t in days
    ]
    return pl.DataFrame(rows, schema={"date": pl.Date, "gross": pl.Float64, "turnover": pl.Float64, "net": pl.Float64, "n_names": pl.Int64})


def summary(book: pl.DataFrame) -> dict:
    """Annualised return (252·mean), volatility (√252·std), Sharpe (rf = 0), max drawdown, mean turnover."""
    if book.height == 0:
        return {"Ann. Ret.": math.nan, "Ann. Vol.": math.nan, "Sharpe": math.nan, "Max DD": math.nan, "Turnover": math.nan}
    r = book["net"].to_numpy()
    ann = 252 * float(np.mean(r))
    vol = math.sqrt(252) * float(np.std(r, ddof=1)) if len(r) > 1 else math.nan
    curve = np.cumprod(1 + r)
    peak = np.maximum.accumulate(np.concatenate([[1.0], curve]))[1:]
    mdd = float(np.min(curve / peak - 1))
    return {
        "Ann. Ret.": ann,
        "Ann. Vol.": vol,
        "Sharpe": ann / vol if vol and vol > 0 else math.nan,
        "Max DD": mdd,
        "Turnover": float(np.mean(book["turnover"].to_numpy())),
    }
