"""Prices: a regime-switching market factor, sector factors, idiosyncratic noise, planted
abnormal returns, dividends and consistent OHLCV bars.

Daily log total return of stock i on day t::

    r = alpha_i + beta_i * m_t + gamma_i * f_{s,t} + sigma_i * k_t * e + a_t

``m_t`` is the market factor (QQQ's return up to a tiny tracking noise), ``f_{s,t}`` the sector
factor, ``k_t`` the idiosyncratic regime scale and ``a_t`` the planted abnormal return (only on
D+1..D+5 of an event). Adjusted closes compound ``r`` exactly; closes drop by the dividend on
ex-dates (Yahoo-style multiplicative back-adjustment reproduces ``r`` from Adj Close).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import params as P
from .universe import Company


def rng_for(seed: int, *keys: int) -> np.random.Generator:
    """An independent, stable stream for one component of the world."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), *[int(k) for k in keys]])))


# stream ids (first key after the seed)
S_MARKET, S_SECTOR, S_STOCK, S_PRICE, S_EVENTS, S_NEWS, S_FILINGS, S_BACKGROUND, S_FUND = range(1, 10)


@dataclass(frozen=True)
class MarketPath:
    regime: np.ndarray  # int8, 0 calm / 1 turbulent
    m: np.ndarray  # market factor log-returns
    qqq_noise: np.ndarray
    pi_turb: float  # stationary share of the turbulent regime


def simulate_market(seed: int, n_days: int) -> MarketPath:
    rng = rng_for(seed, S_MARKET)
    stay = P.REGIME_STAY
    regime = np.zeros(n_days, dtype=np.int8)
    u = rng.random(n_days)
    state = 0
    for t in range(n_days):
        if t > 0 and u[t] > stay[state]:
            state = 1 - state
        regime[t] = state
    mu = np.asarray(P.MARKET_MU)[regime]
    vol = np.asarray(P.MARKET_VOL)[regime]
    m = mu + vol * rng.standard_normal(n_days)
    noise = P.TRACKING_VOL * rng.standard_normal(n_days)
    pi_turb = (1 - stay[0]) / ((1 - stay[0]) + (1 - stay[1]))
    return MarketPath(regime=regime, m=m, qqq_noise=noise, pi_turb=pi_turb)


def simulate_sector(seed: int, sector_key: int, regime: np.ndarray) -> tuple[np.ndarray, float]:
    """A sector factor path and its calm-regime daily vol."""
    rng = rng_for(seed, S_SECTOR, sector_key)
    vol = float(rng.uniform(*P.SECTOR_VOL_RANGE))
    scale = np.asarray(P.SECTOR_SCALE)[regime]
    return vol * scale * rng.standard_normal(len(regime)), vol


@dataclass(frozen=True)
class StockParams:
    beta: float
    gamma: float
    alpha: float
    sigma_idio: float
    sector_vol: float
    s_base: float  # residual daily sd vs the market without events (regime-averaged)
    unit: float  # u: residual daily sd including the planted events (event sizes are in u)
    price0: float
    volume0: float
    dividend_yield: float  # 0 for non-payers
    dividend_phase: int  # first ex-date offset (sessions)


def stock_params(seed: int, c: Company, sector_vol: float, pi_turb: float, events_per_year: float) -> StockParams:
    rng = rng_for(seed, S_STOCK, c.uid)
    beta = float(rng.uniform(*P.BETA_RANGE))
    gamma = float(rng.uniform(*P.GAMMA_RANGE))
    alpha = float(rng.uniform(*P.ALPHA_RANGE))
    sigma = float(rng.uniform(*P.IDIO_VOL_RANGE))
    price0 = float(np.exp(rng.uniform(np.log(20.0), np.log(400.0))))
    volume0 = float(np.exp(rng.uniform(np.log(3e6), np.log(6e7))))
    pays = rng.random() < P.DIVIDEND_SHARE
    dy = float(rng.uniform(*P.DIVIDEND_YIELD_RANGE)) if pays else 0.0
    phase = int(rng.integers(5, 60))
    s2 = gamma**2 * sector_vol**2 * ((1 - pi_turb) + pi_turb * P.SECTOR_SCALE[1] ** 2) + sigma**2 * ((1 - pi_turb) + pi_turb * P.IDIO_SCALE[1] ** 2)
    s_base = float(np.sqrt(s2))
    unit = s_base / np.sqrt(1.0 - event_variance_share(events_per_year))
    return StockParams(beta, gamma, alpha, sigma, sector_vol, s_base, float(unit), price0, volume0, dy, phase)


def event_variance_share(events_per_year: float) -> float:
    """lambda * E[sum a^2] / u^2: the share of residual variance the planted events add
    (solves u^2 = s^2 + lambda * m2 * u^2), capped at 0.8."""
    non_q = max(0.0, events_per_year - 4.0)
    total_w = sum(tp.weight for tp in P.TYPE_PARAMS.values())
    m2 = 4.0 * P.mean_sq_abnormal(P.EARNINGS)
    for c, tp in P.TYPE_PARAMS.items():
        m2 += non_q * tp.weight / total_w * P.mean_sq_abnormal(c)
    return float(min(0.8, m2 / 252.0))


@dataclass
class PriceSeries:
    ticker: str
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    adj_close: np.ndarray
    volume: np.ndarray
    dividend: np.ndarray
    r_market: np.ndarray
    r_sector: np.ndarray
    r_idio: np.ndarray
    r_alpha: np.ndarray
    r_abnormal: np.ndarray
    r_total: np.ndarray


def dividend_schedule(sp: StockParams, n_days: int) -> np.ndarray:
    """Ex-date flags every 63 sessions from the phase (dividend yield > 0 only)."""
    flags = np.zeros(n_days, dtype=bool)
    if sp.dividend_yield > 0:
        flags[sp.dividend_phase :: 63] = True
        flags[0] = False
    return flags


def build_prices(
    seed: int,
    c: Company,
    sp: StockParams,
    mk: MarketPath,
    sector_f: np.ndarray,
    abnormal: np.ndarray,
    spike: np.ndarray,
) -> PriceSeries:
    """OHLCV, dividends and the true return components of one stock (or of the market proxy)."""
    n = len(mk.m)
    rng = rng_for(seed, S_PRICE, c.uid)
    z_idio = rng.standard_normal(n)
    z_gap = rng.standard_normal(n)
    z_hi = np.abs(rng.standard_normal(n))
    z_lo = np.abs(rng.standard_normal(n))
    z_vol = rng.standard_normal(n)
    if c.is_market:
        r_market = mk.m.copy()
        r_sector = np.zeros(n)
        r_idio = mk.qqq_noise.copy()
        r_alpha = np.zeros(n)
        day_vol = np.asarray(P.MARKET_VOL)[mk.regime]
    else:
        r_market = sp.beta * mk.m
        r_sector = sp.gamma * sector_f
        r_idio = sp.sigma_idio * np.asarray(P.IDIO_SCALE)[mk.regime] * z_idio
        r_alpha = np.full(n, sp.alpha)
        day_vol = np.sqrt((sp.beta * np.asarray(P.MARKET_VOL)[mk.regime]) ** 2 + sp.s_base**2)
    r_total = r_alpha + r_market + r_sector + r_idio + abnormal
    r_total[0] = 0.0
    ex = dividend_schedule(sp, n)
    close = np.empty(n)
    opn = np.empty(n)
    div = np.zeros(n)
    close[0] = sp.price0
    opn[0] = sp.price0 * np.exp(0.2 * day_vol[0] * z_gap[0])
    annual_div = None
    for t in range(1, n):
        prev = close[t - 1]
        if ex[t]:
            if annual_div is None or (t - sp.dividend_phase) % 252 < 63:
                # set (and once a year reset) the quarterly dividend from the current price
                annual_div = round(prev * sp.dividend_yield, 2)
            div[t] = max(0.01, round(annual_div / 4.0, 2))
        base = prev - div[t]
        close[t] = base * np.exp(r_total[t])
        gap = abnormal[t] + 0.3 * (r_total[t] - abnormal[t]) + 0.25 * day_vol[t] * z_gap[t]
        opn[t] = base * np.exp(gap)
    # adj close: multiply history before each ex-date by (1 - div / close_{ex-1})
    factor = np.ones(n)
    ex_idx = np.nonzero(div > 0)[0]
    for e in ex_idx:
        factor[:e] *= 1.0 - div[e] / close[e - 1]
    adj = close * factor
    hi = np.maximum(opn, close) * np.exp(0.45 * day_vol * z_hi)
    lo = np.minimum(opn, close) * np.exp(-0.45 * day_vol * z_lo)
    turb = mk.regime.astype(float)
    vol = sp.volume0 * np.exp(0.3 * z_vol + 0.45 * turb) * (1.0 + spike)
    return PriceSeries(
        ticker=c.ticker,
        open=opn,
        high=hi,
        low=lo,
        close=close,
        adj_close=adj,
        volume=np.round(vol).astype(np.int64),
        dividend=div,
        r_market=r_market,
        r_sector=r_sector,
        r_idio=r_idio,
        r_alpha=r_alpha,
        r_abnormal=abnormal.copy(),
        r_total=r_total,
    )
