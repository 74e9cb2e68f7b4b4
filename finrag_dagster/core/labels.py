"""Residual-impact labels (seed 000 §3.4 eqs 1-3, App. A.2; docs/method.md §5).

For ticker i, decision day D and horizon h: an OLS market model of overlapping h-day returns on
QQQ's over the 252 sessions ending 20 before D, ε = R − (α + βRm) over close(D)→close(D+h),
z = ε/σ and y = ±1 beyond ±1, else 0; ``insufficient_history`` below 120 observations, ``pending``
before close(D+h) exists. Each label's regression uses its own window only (not a rolling update
such as statsmodels ``RollingOLS``), so a label's bytes do not depend on which other days a run
computes. The rule and its tests: docs/method.md §5 and docs/feedback_loop.md, "Residual labels".
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from .calendar import TradingCalendar
from .settings import HORIZONS, LabelSettings
from .storage.schemas import TableSpec

LABELS = TableSpec(
    "labels",
    pa.schema(
        [
            pa.field("ticker", pa.string(), nullable=False),
            pa.field("horizon", pa.string(), nullable=False),
            pa.field("maturity_day", pa.date32(), nullable=False),
            pa.field("status", pa.string(), nullable=False),  # ok | pending | insufficient_history | missing_price
            pa.field("n_obs", pa.int32(), nullable=False),
            pa.field("R", pa.float64(), nullable=True),
            pa.field("Rm", pa.float64(), nullable=True),
            pa.field("alpha", pa.float64(), nullable=True),
            pa.field("beta", pa.float64(), nullable=True),
            pa.field("sigma", pa.float64(), nullable=True),
            pa.field("epsilon", pa.float64(), nullable=True),
            pa.field("z", pa.float64(), nullable=True),
            pa.field("y", pa.int8(), nullable=True),
        ]
    ),
    ("date",),
    ("ticker", "horizon"),
    "Residual-return label per ticker, decision day and horizon; pending until close(D+h) exists.",
)


class LabelNotMatured(RuntimeError):
    """A label was asked for before its horizon matured (close(D+h) after the as-of day)."""


def price_panel(prices: pl.DataFrame, cal: TradingCalendar, lo: int, hi: int) -> tuple[list[str], np.ndarray]:
    """Adjusted closes as a (sessions lo..hi, tickers) matrix with NaN where a bar is missing."""
    tickers = sorted(prices["ticker"].unique().to_list())
    col = {t: j for j, t in enumerate(tickers)}
    P = np.full((hi - lo + 1, len(tickers)), np.nan)
    idx = np.searchsorted(cal.sessions, prices["date"].to_numpy().astype("datetime64[D]")) - lo
    jj = np.array([col[t] for t in prices["ticker"].to_list()], dtype=np.int64)
    ok = (idx >= 0) & (idx < P.shape[0])
    P[idx[ok], jj[ok]] = prices["adj_close"].to_numpy()[ok]
    return tickers, P


def window_market_model(r: np.ndarray, rm: np.ndarray, ends: np.ndarray, window: int, min_obs: int) -> tuple[np.ndarray, ...]:
    """alpha, beta, sigma (ddof 2), nobs of OLS r ~ 1 + rm over the trailing ``window`` rows that end
    at each index of ``ends`` (seed 000 eq. 1), each window computed from its own rows only.

    Rows where r or rm is NaN are left out; fewer than ``min_obs`` valid rows (or a window reaching
    before the series) give NaN coefficients.
    """
    k = len(ends)
    alpha, beta, sigma = (np.full(k, np.nan) for _ in range(3))
    nobs = np.zeros(k, dtype=np.int64)
    ok_end = (ends >= window - 1) & (ends < len(r))
    if not ok_end.any() or len(r) < window:
        return alpha, beta, sigma, nobs
    idx = ends[ok_end][:, None] - np.arange(window - 1, -1, -1)[None, :]  # (k', window) row indices
    y, x = r[idx], rm[idx]
    v = ~(np.isnan(y) | np.isnan(x))
    n = v.sum(axis=1)
    nobs[ok_end] = n
    y0, x0 = np.where(v, y, 0.0), np.where(v, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        xm = x0.sum(axis=1) / n
        ym = y0.sum(axis=1) / n
        dx = np.where(v, x - xm[:, None], 0.0)
        dy = np.where(v, y - ym[:, None], 0.0)
        b_ = (dx * dy).sum(axis=1) / (dx * dx).sum(axis=1)
        a_ = ym - b_ * xm
        res = np.where(v, y - a_[:, None] - b_[:, None] * x, 0.0)
        s_ = np.sqrt((res * res).sum(axis=1) / (n - 2))
    enough = n >= max(min_obs, 3)
    alpha[ok_end] = np.where(enough, a_, np.nan)
    beta[ok_end] = np.where(enough, b_, np.nan)
    sigma[ok_end] = np.where(enough, s_, np.nan)
    return alpha, beta, sigma, nobs


_LABEL_COLUMNS = {
    "date": pl.Date,
    "ticker": pl.Utf8,
    "horizon": pl.Utf8,
    "maturity_day": pl.Date,
    "status": pl.Utf8,
    "n_obs": pl.Int32,
    "R": pl.Float64,
    "Rm": pl.Float64,
    "alpha": pl.Float64,
    "beta": pl.Float64,
    "sigma": pl.Float64,
    "epsilon": pl.Float64,
    "z": pl.Float64,
    "y": pl.Int8,
}


@dataclass(frozen=True)
class _LabelPanel:
    """The closes a labels run reads: sessions ``lo`` .. ``lo + len(P) - 1`` by ticker (``names``),
    the market proxy's column ``m`` (closes ``mk``) and its last bar (the run's "now")."""

    lo: int
    names: list[str]
    P: np.ndarray
    m: int
    mk: np.ndarray
    last_market: int


def _label_panel(prices: pl.DataFrame, cal: TradingCalendar, market: str, lo: int, hi: int) -> _LabelPanel:
    """The adjusted closes of sessions lo..hi; the market proxy must be among them."""
    names, P = price_panel(prices.filter(pl.col("ticker").is_not_null()), cal, lo, hi)
    if market not in names:
        raise ValueError(f"labels need the market proxy {market} in prices")
    m = names.index(market)
    mk = P[:, m]
    last_market = int(np.max(np.flatnonzero(~np.isnan(mk)))) if np.any(~np.isnan(mk)) else -1
    return _LabelPanel(lo, names, P, m, mk, last_market)


def _label_status(pn: _LabelPanel, i: int, j: int, h: int, fit: tuple, *, min_obs: int, z_threshold: float) -> tuple[str, dict]:
    """(status, values) of the label of ticker column ``j`` on panel row ``i`` at horizon ``h``, with
    ``fit`` = (alpha, beta, sigma, nobs, window end) of its market model: eq. 2's residual
    ε = R − (α + βRm) and eq. 3's z = ε/σ and y when the label is ok."""
    alpha, beta, sigma, nobs, end = fit
    P, mk = pn.P, pn.mk
    vals = dict(R=None, Rm=None, alpha=None, beta=None, sigma=None, epsilon=None, z=None, y=None)
    if i + h > pn.last_market:
        return "pending", vals
    if end < 0 or np.isnan(alpha) or not (nobs >= min_obs):
        return "insufficient_history", vals
    if np.isnan(P[i, j]) or np.isnan(P[i + h, j]) or np.isnan(mk[i]) or np.isnan(mk[i + h]):
        return "missing_price", vals
    R = P[i + h, j] / P[i, j] - 1
    Rm = mk[i + h] / mk[i] - 1
    eps = R - (alpha + beta * Rm)
    z = eps / sigma
    y = 1 if z > z_threshold else (-1 if z < -z_threshold else 0)
    return "ok", dict(R=R, Rm=Rm, alpha=alpha, beta=beta, sigma=sigma, epsilon=eps, z=z, y=y)


def _label_record(pn: _LabelPanel, cal: TradingCalendar, *, ticker: str, day: str, k: int, h: int, fit: tuple, params: LabelSettings) -> dict:
    """One label row: ticker, day D (session ``k``), horizon ``h``, maturity_day D+h, status and values."""
    end = fit[4]
    mat = cal.sessions[k + h].item() if k + h < len(cal.sessions) else None
    rec = dict(
        date=dt.date.fromisoformat(day),
        ticker=ticker,
        horizon=f"{h}D",  # the names of HORIZON_NAMES, for any horizon asked
        maturity_day=mat,
        n_obs=int(fit[3]) if end >= 0 else 0,
    )
    status, vals = _label_status(pn, k - pn.lo, pn.names.index(ticker), h, fit, min_obs=params.min_obs, z_threshold=params.z_threshold)
    rec["status"] = status
    rec.update(vals)
    return rec


def compute_labels(
    prices: pl.DataFrame,
    days: list[str],
    cal: TradingCalendar,
    market: str,
    tickers: list[str] | None = None,
    params: LabelSettings = LabelSettings(),
    horizons: tuple[int, ...] = HORIZONS,
) -> pl.DataFrame:
    """Labels for every (ticker, day, horizon). ``prices``: ticker, date, adj_close for every bar
    needed (k−window−gap+1 … D+h); "now" is the last date with a market bar. ``params``: the
    estimation window, gap, minimum observations and z threshold (settings ``[labels]``)."""
    window, gap, min_obs = params.window, params.gap, params.min_obs
    ks = [cal.session_index(d) for d in days]
    lo = min(ks) - (window + gap - 1)
    hi = max(ks) + max(horizons)
    if lo < 0:
        raise ValueError("labels need a calendar with the estimation window before the first day")
    pn = _label_panel(prices, cal, market, lo, hi)
    P, names, m = pn.P, pn.names, pn.m
    want = [t for t in (tickers if tickers is not None else names) if t != market and t in names]
    rows: dict[str, list] = {k: [] for k in _LABEL_COLUMNS}
    for h in horizons:
        win = window - h  # overlapping h-day returns with both ends inside the window
        # h-day return starting at t: P[t+h]/P[t]-1 (index t relative to lo)
        Rh = np.full(P.shape, np.nan)
        Rh[:-h] = P[h:] / P[:-h] - 1
        for t in want:
            j = names.index(t)
            ends = np.array([k - lo - gap - h for k in ks], dtype=np.int64)  # last start t with t+h = k-gap
            alpha, beta, sigma, nobs = window_market_model(Rh[:, j], Rh[:, m], ends, win, min_obs)
            for w, (d, k) in enumerate(zip(days, ks)):
                fit = (alpha[w], beta[w], sigma[w], nobs[w], int(ends[w]))
                rec = _label_record(pn, cal, ticker=t, day=d, k=k, h=h, fit=fit, params=params)
                for key, v in rec.items():
                    rows[key].append(v)
    return pl.DataFrame(rows, schema=_LABEL_COLUMNS)


def matured(labels: pl.DataFrame, as_of_day: dt.date) -> pl.DataFrame:
    """Labels usable by a decision whose feedback cut-off is ``as_of_day`` (maturity <= as_of_day).

    Raises LabelNotMatured if any requested row is not matured by then (asking early is an error),
    and ValueError if a row that should have matured is still pending (prices missing)."""
    early = labels.filter(pl.col("maturity_day") > as_of_day)
    if early.height:
        r = early.row(0, named=True)
        raise LabelNotMatured(f"label {r['ticker']} {r['date']} {r['horizon']} matures {r['maturity_day']}, after {as_of_day}")
    stuck = labels.filter(pl.col("status") == "pending")
    if stuck.height:
        r = stuck.row(0, named=True)
        raise ValueError(f"label {r['ticker']} {r['date']} {r['horizon']} matured on {r['maturity_day']} but is still pending: prices missing")
    return labels


def labels_from_lake(lake, cal: TradingCalendar, s, days: list[str]) -> pl.DataFrame:
    """Seed 000 eqs 1-3 for ``days`` from the lake's prices and universe as they are now."""
    ls = s.labels
    i0 = cal.session_index(days[0]) - (ls.window + ls.gap)
    i1 = cal.session_index(days[-1]) + max(HORIZONS)
    lo = cal.sessions[max(i0, 0)].item()
    hi = cal.sessions[min(i1, len(cal.sessions) - 1)].item()
    prices = lake.read_range("prices", lo, hi, columns=["ticker", "adj_close"])
    uni = lake.read("universe")
    tickers = uni.filter(~pl.col("is_benchmark"))["ticker"].to_list()
    return compute_labels(prices, days, cal, market=s.market_ticker, tickers=tickers, params=ls)
