"""Every planted quantity of the generative model, and the exact source utility it implies.

Per event of type c, in units ``u`` of the stock's residual daily sd: ``d_short`` and ``d_long`` in
{-1, 0, +1} drawn with ``p_zero``, ``p_cont``, ``p_rev`` and ``p_delay``; a jump ``J = d_short * j``
on D+1 and a drift ``L = d_long * l`` spread over D+2..D+5, sized so that the true direction per
horizon is a deterministic function of (d_short, d_long) (:func:`true_dirs`). A news tone tracks
``d_short`` with ``rho_news[c]``, an SEC filing's tone ``d_long`` with ``rho_sec[c]``. The model,
the parameters and the planted utilities: docs/synthetic_world.md, "Events" and "Tone and planted
source reliability".
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core.events import CAPITAL, EARNINGS, LEGAL, MANAGEMENT, OTHER
from ...core.settings import HORIZONS

EVENT_TYPES = (EARNINGS, LEGAL, CAPITAL, MANAGEMENT, OTHER)
FAMILIES = ("news", "sec_filing")


@dataclass(frozen=True)
class TypeParams:
    p_zero: float  # P(d_short = 0)
    p_cont: float  # P(d_long = d_short | d_short != 0)
    p_rev: float  # P(d_long = -d_short | d_short != 0)
    p_delay: float  # P(d_long != 0 | d_short = 0)
    rho_news: float  # P(news tone = d_short)
    rho_sec: float  # P(SEC tone = d_long)
    p_8k: float  # P(an event of this type comes with an 8-K); quarterly earnings always do
    weight: float  # share among the Poisson (non-quarterly) events


# Chosen so that for each (type, horizon) one family is clearly better, with orderings that
# differ across types (see docs/synthetic_world.md for the resulting table):
#   Earnings: news at 1D/3D, SEC at 5D     Legal: SEC at every horizon
#   Capital:  news at every horizon        Management: news at 1D, SEC at 3D/5D
#   Other:    news at 1D/3D, SEC at 5D (weaker)
TYPE_PARAMS: dict[str, TypeParams] = {
    EARNINGS: TypeParams(0.10, 0.40, 0.25, 0.50, 0.82, 0.72, 1.00, 0.10),
    LEGAL: TypeParams(0.15, 0.80, 0.05, 0.60, 0.48, 0.86, 0.70, 0.22),
    CAPITAL: TypeParams(0.15, 0.75, 0.05, 0.10, 0.80, 0.45, 0.75, 0.26),
    MANAGEMENT: TypeParams(0.10, 0.65, 0.35, 0.30, 0.70, 0.90, 0.60, 0.28),
    OTHER: TypeParams(0.40, 0.20, 0.35, 0.50, 0.62, 0.64, 0.35, 0.14),
}

# Magnitudes in units of u (uniform ranges); see true_dirs() for why these ranges.
JUMP_RANGE = (1.85, 2.15)  # |J| when d_short != 0
CONT_DRIFT_RANGE = (1.6, 2.6)  # |L| when d_long = d_short
REV_DRIFT_RANGE = (4.6, 5.4)  # |L| when d_long = -d_short
DELAY_DRIFT_RANGE = (2.6, 3.4)  # |L| when d_short = 0, d_long != 0
DRIFT_DAYS = 4  # D+2 .. D+5

# Market: two-state regime chain (calm, turbulent).
REGIME_STAY = (0.985, 0.95)
MARKET_MU = (0.0007, -0.0012)
MARKET_VOL = (0.009, 0.022)
SECTOR_VOL_RANGE = (0.005, 0.009)
SECTOR_SCALE = (1.0, 1.8)
IDIO_VOL_RANGE = (0.012, 0.025)
IDIO_SCALE = (1.0, 1.6)
BETA_RANGE = (0.7, 1.4)
GAMMA_RANGE = (0.6, 1.2)
ALPHA_RANGE = (-0.0001, 0.0003)
TRACKING_VOL = 0.0004  # QQQ = market factor + this noise
DIVIDEND_SHARE = 0.45  # share of names paying a quarterly dividend
DIVIDEND_YIELD_RANGE = (0.005, 0.03)

# Anchor timing buckets. Quarterly earnings: 75% after close, 25% pre-market; the other
# events use the mix below so that all anchors come out near 25/35/30/10.
BUCKETS = ("pre_market", "regular", "after_close", "non_trading_day")
EARNINGS_BUCKET_P = (0.25, 0.0, 0.75, 0.0)
OTHER_BUCKET_P = (0.25, 0.41, 0.22, 0.12)
MIN_EVENT_SPACING = 6  # sessions between two decision days of the same ticker

# News volume per event / ticker.
REREPORT_P = (0.30, 0.35, 0.20, 0.15)  # 0..3 re-reports
SAME_URL_PEER_P = 0.15
COMPANION_P = (0.15, 0.50, 0.35)  # 0..2 companions before decision_time(D)
FOLLOWUP_P = (0.40, 0.40, 0.20)  # 0..2 follow-ups on D+1..D+8
PEER_P = 0.40
TRAP_P = (0.45, 0.40, 0.15)  # 0..2 leakage traps
BACKGROUND_PER_YEAR = 30.0
DATE_ONLY_P = {
    "background": 0.35,
    "followup": 0.25,
    "rereport": 0.05,
    "companion": 0.15,  # only where the event's ET date precedes D (still visible before close(D))
}
TRAP_KINDS = ("after_hours", "date_only_d", "later")
TRAP_LATER_DATE_ONLY_P = 0.30


def config_probs(c: str) -> list[tuple[float, int, int]]:
    """All (probability, d_short, d_long) configurations of an event of type ``c``."""
    p = TYPE_PARAMS[c]
    out: list[tuple[float, int, int]] = []
    for d in (1, -1):
        q = (1 - p.p_zero) / 2
        out.append((q * p.p_cont, d, d))
        out.append((q * p.p_rev, d, -d))
        out.append((q * (1 - p.p_cont - p.p_rev), d, 0))
    for dl in (1, -1):
        out.append((p.p_zero * p.p_delay / 2, 0, dl))
    out.append((p.p_zero * (1 - p.p_delay), 0, 0))
    return out


def true_dirs(d_short: int, d_long: int) -> tuple[int, int, int]:
    """(dir_1, dir_3, dir_5) implied by the magnitude ranges (thresholds u*sqrt(h)).

    Continuation: CAR3 = j + l/2 >= 2.65 > sqrt(3), CAR5 = j + l >= 3.45 > sqrt(5).
    None: CAR3 = j >= 1.85 > sqrt(3), CAR5 = j <= 2.15 < sqrt(5) -> 0.
    Reversal: |CAR3| = |j - l/2| <= 0.85 -> 0, |CAR5| = l - j >= 2.45 -> sign d_long.
    Delayed: CAR3 = l/2 <= 1.7 -> 0, CAR5 = l >= 2.6 -> d_long.
    """
    if d_short != 0 and d_long == d_short:
        return (d_short, d_short, d_short)
    if d_short != 0 and d_long == 0:
        return (d_short, d_short, 0)
    if d_short != 0 and d_long == -d_short:
        return (d_short, 0, d_long)
    return (0, 0, d_long)


def p_tone(tone: int, target: int, rho: float) -> float:
    return rho if tone == target else (1.0 - rho) / 2.0


def planted_utility(family: str, c: str, h: int) -> float:
    """Exact P(a document's tone == dir_h) for family ``family`` and event type ``c``."""
    p = TYPE_PARAMS[c]
    hi = HORIZONS.index(h)
    rho = p.rho_news if family == "news" else p.rho_sec
    total = 0.0
    for w, ds, dl in config_probs(c):
        target = ds if family == "news" else dl
        total += w * p_tone(true_dirs(ds, dl)[hi], target, rho)
    return total


# world.publisher_utility: each news document's publisher class is drawn given whether its tone
# is right (= d_short), P(class | right) and P(class | wrong), then a publisher of that class
# uniformly. By Bayes P(tone right | class k) = rho·a_k / (rho·a_k + (1 − rho)·b_k), the same for
# every configuration of the event, so a class's planted utility is planted_utility's formula with
# that reliability. Aggregators keep the base rate (a = b).
PUBLISHER_CLASS = {
    "Example Newswire": "wire",
    "Summit Street Report": "wire",
    "Northbridge Financial Times": "wire",
    "Lakeside Investor": "opinion",
    "Bluewater Equity Brief": "opinion",
    "Copperfield Capital News": "opinion",
    "Acme Markets Daily": "aggregator",
    "Granite Ledger": "aggregator",
}
PUBLISHER_CLASSES = ("wire", "opinion", "aggregator")
CLASS_GIVEN_RIGHT = (0.55, 0.20, 0.25)
CLASS_GIVEN_WRONG = (0.15, 0.60, 0.25)


def class_reliability(cls: str, rho: float) -> float:
    """P(tone right | publisher class) under world.publisher_utility."""
    i = PUBLISHER_CLASSES.index(cls)
    a, b = CLASS_GIVEN_RIGHT[i], CLASS_GIVEN_WRONG[i]
    return rho * a / (rho * a + (1.0 - rho) * b)


def planted_class_utility(cls: str, c: str, h: int) -> float:
    """Exact P(tone == dir_h) of a news document of publisher class ``cls`` (world.publisher_utility)."""
    p = TYPE_PARAMS[c]
    hi = HORIZONS.index(h)
    rho = class_reliability(cls, p.rho_news)
    return sum(w * p_tone(true_dirs(ds, dl)[hi], ds, rho) for w, ds, dl in config_probs(c))


def mean_sq_abnormal(c: str) -> float:
    """E[sum over days of squared abnormal returns] per event of type c, in u^2."""

    def m2(lo: float, hi: float) -> float:  # E[x^2], x ~ U(lo, hi)
        return (lo * lo + lo * hi + hi * hi) / 3.0

    p = TYPE_PARAMS[c]
    j2 = m2(*JUMP_RANGE)
    per_day = 1.0 / DRIFT_DAYS  # l/4 per day -> 4 * (l/4)^2 = l^2 / 4
    nz = (1 - p.p_zero) * (j2 + p.p_cont * m2(*CONT_DRIFT_RANGE) * per_day + p.p_rev * m2(*REV_DRIFT_RANGE) * per_day)
    z = p.p_zero * p.p_delay * m2(*DELAY_DRIFT_RANGE) * per_day
    return nz + z
