"""Event schedule, outcome configuration and planted abnormal-return paths.

Quarterly earnings follow each company's fiscal calendar; the other events arrive as a
renewal process (minimum spacing :data:`params.MIN_EVENT_SPACING` sessions between decision
days of one ticker, so the D+1..D+5 windows never overlap). Every event's decision day D is
the XNYS decision day of its first public document (docs/method.md §1); abnormal returns are added on
D+1..D+5 only.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import numpy as np

from . import params as P
from .clock import MIN, NS, WorldDays, et_ns
from .universe import Company


@dataclass(frozen=True)
class FiscalQuarter:
    fy: int  # fiscal year = calendar year in which the fiscal year ends
    q: int  # 1..4
    end: dt.date  # period end (a month end)

    @property
    def label(self) -> str:
        return f"Q{self.q} FY{self.fy}"


@dataclass
class Event:
    event_id: str
    ticker: str
    sector: str
    event_type: str
    quarterly: bool  # a quarterly earnings release (vs a Poisson event)
    bucket: str
    d_idx: int  # world index of the decision day
    anchor_ns: int  # public time of the anchor article
    event_ns: int = 0  # first public time of the event (8-K or anchor)
    k8_ns: int | None = None  # 8-K acceptance time, if the event has an 8-K
    d_short: int = 0
    d_long: int = 0
    j: float = 0.0  # jump size in units of u
    l: float = 0.0  # drift size in units of u
    unit: float = 0.0  # u of the stock
    car: tuple[float, float, float] = (0.0, 0.0, 0.0)
    dirs: tuple[int, int, int] = (0, 0, 0)
    news_tone: int = 0  # tone of the anchor (and its re-reports)
    sec_tone: int | None = None  # tone of the 8-K
    fq: FiscalQuarter | None = None
    extra: dict = field(default_factory=dict)


def month_end(year: int, month: int) -> dt.date:
    nxt = dt.date(year + (month == 12), month % 12 + 1, 1)
    return nxt - dt.timedelta(days=1)


def fiscal_quarter_of(period_end: dt.date, fye_month: int) -> FiscalQuarter:
    """Fiscal year and quarter of a quarter-end month for a company with FYE month ``fye_month``."""
    fy = period_end.year if period_end.month <= fye_month else period_end.year + 1
    q = ((period_end.month - fye_month - 1) % 12) // 3 + 1
    return FiscalQuarter(fy, q, period_end)


def quarter_ends(c: Company, first: dt.date, last: dt.date) -> list[FiscalQuarter]:
    """Fiscal quarter ends of ``c`` in [first, last]."""
    out = []
    m0 = c.fye_month
    for year in range(first.year - 1, last.year + 2):
        for k in range(4):
            month = (m0 + 3 * k - 1) % 12 + 1
            qe = month_end(year, month)
            if first <= qe <= last:
                out.append(fiscal_quarter_of(qe, m0))
    return sorted(out, key=lambda f: f.end)


def draw_config(rng: np.random.Generator, c: str) -> tuple[int, int]:
    """(d_short, d_long) of an event of type ``c``."""
    p = P.TYPE_PARAMS[c]
    if rng.random() < p.p_zero:
        d_long = (1 if rng.random() < 0.5 else -1) if rng.random() < p.p_delay else 0
        return 0, d_long
    d = 1 if rng.random() < 0.5 else -1
    x = rng.random()
    if x < p.p_cont:
        return d, d
    if x < p.p_cont + p.p_rev:
        return d, -d
    return d, 0


def draw_magnitudes(rng: np.random.Generator, d_short: int, d_long: int) -> tuple[float, float]:
    j = float(rng.uniform(*P.JUMP_RANGE)) if d_short != 0 else 0.0
    if d_long == 0:
        l = 0.0
    elif d_short == 0:
        l = float(rng.uniform(*P.DELAY_DRIFT_RANGE))
    elif d_long == d_short:
        l = float(rng.uniform(*P.CONT_DRIFT_RANGE))
    else:
        l = float(rng.uniform(*P.REV_DRIFT_RANGE))
    return j, l


def draw_tone(rng: np.random.Generator, target: int, rho: float) -> int:
    """``target`` with probability rho, else one of the two other tones (equal odds)."""
    if rng.random() < rho:
        return target
    others = [t for t in (-1, 0, 1) if t != target]
    return others[int(rng.random() < 0.5)]


def _choice(rng: np.random.Generator, probs) -> int:
    return int(rng.choice(len(probs), p=np.asarray(probs) / np.sum(probs)))


def _time_in_bucket(rng: np.random.Generator, wd: WorldDays, d_idx: int, bucket: str) -> int | None:
    """A publication time (UTC ns, whole seconds) whose decision day is wd.days[d_idx]."""
    t = _raw_time_in_bucket(rng, wd, d_idx, bucket)
    if t is None:
        return None
    t -= t % NS
    return t + NS if t % (86400 * NS) == 0 else t  # FNSPID reads 00:00:00 UTC as date-only


def _raw_time_in_bucket(rng: np.random.Generator, wd: WorldDays, d_idx: int, bucket: str) -> int | None:
    day = wd.days[d_idx]
    if bucket == "pre_market":
        open_ns = int(wd.opens[d_idx])
        lo = et_ns(day, 6 * 3600 + 30 * 60)
        return int(rng.integers(lo, open_ns - 10 * MIN))
    if bucket == "regular":
        return int(rng.integers(int(wd.opens[d_idx]) + 5 * MIN, int(wd.closes[d_idx]) - 35 * MIN))
    if bucket == "after_close":
        if d_idx == 0:
            return None
        c = int(wd.closes[d_idx - 1])
        return int(rng.integers(c + 5 * MIN, c + 240 * MIN))
    # non-trading day strictly between the previous session and D
    if d_idx == 0:
        return None
    prev = wd.days[d_idx - 1]
    gap = [prev + dt.timedelta(days=k) for k in range(1, (day - prev).days)]
    if not gap:
        return None
    g = gap[int(rng.integers(0, len(gap)))]
    return et_ns(g, int(rng.integers(8 * 3600, 20 * 3600)))


def _follows_gap(wd: WorldDays, i: int) -> bool:
    return i > 0 and (wd.days[i] - wd.days[i - 1]).days > 1


def schedule_events(
    rng: np.random.Generator,
    c: Company,
    wd: WorldDays,
    first_idx: int,
    events_per_year: float,
) -> list[Event]:
    """Quarterly earnings releases plus Poisson-like events for one ticker (decision days in
    [first_idx, len-6]), sorted by decision day; no two within MIN_EVENT_SPACING sessions."""
    last_idx = len(wd) - 6  # D+5 must exist
    spacing = P.MIN_EVENT_SPACING
    events: list[Event] = []
    # quarterly earnings
    first_day = wd.days[first_idx]
    for fq in quarter_ends(c, first_day - dt.timedelta(days=60), wd.days[-1]):
        lag = rng.uniform(28, 50) if fq.q == 4 else rng.uniform(18, 35)
        rel = wd.index_on_or_after(fq.end + dt.timedelta(days=int(lag)))
        after = rng.random() < P.EARNINGS_BUCKET_P[2]
        if rel >= len(wd):
            continue
        if after:
            k8 = int(wd.closes[rel]) + int(rng.integers(5, 90)) * MIN + int(rng.integers(0, 60)) * 10**9
            d_idx = rel + 1
        else:
            k8 = et_ns(wd.days[rel], int(rng.integers(7 * 3600, 8 * 3600 + 30 * 60)))
            d_idx = rel
        anchor = k8 + int(rng.integers(1, 20)) * MIN + int(rng.integers(0, 60)) * 10**9
        if d_idx < first_idx or d_idx > last_idx:
            continue
        ev = Event("", c.ticker, c.sector, P.EARNINGS, True, "after_close" if after else "pre_market", d_idx, anchor)
        ev.k8_ns = k8
        ev.fq = fq
        events.append(ev)
    taken = sorted(e.d_idx for e in events)

    def clash(i: int) -> bool:
        return any(abs(i - t) < spacing for t in taken)

    # renewal process for the other events
    rate = max(0.0, events_per_year - 4.0)
    if rate > 0:
        mean_gap = 252.0 / rate
        extra_mean = max(0.5, mean_gap - spacing)
        types = list(P.TYPE_PARAMS)
        weights = [P.TYPE_PARAMS[t].weight for t in types]
        pos = first_idx + int(rng.exponential(extra_mean))
        while pos <= last_idx:
            while clash(pos) and pos <= last_idx:
                pos += 1
            if pos > last_idx:
                break
            etype = types[_choice(rng, weights)]
            bucket = P.BUCKETS[_choice(rng, P.OTHER_BUCKET_P)]
            d_idx = pos
            if bucket == "non_trading_day" and not _follows_gap(wd, d_idx):
                k = d_idx
                while k <= last_idx and not _follows_gap(wd, k):
                    k += 1
                if k <= last_idx and not clash(k):
                    d_idx = k
                else:
                    bucket = "regular"
            t = _time_in_bucket(rng, wd, d_idx, bucket)
            if t is None:
                bucket, t = "regular", _time_in_bucket(rng, wd, d_idx, "regular")
            ev = Event("", c.ticker, c.sector, etype, False, bucket, d_idx, int(t))
            events.append(ev)
            taken.append(d_idx)
            taken.sort()
            pos = d_idx + spacing + int(rng.exponential(extra_mean))
    events.sort(key=lambda e: e.d_idx)
    return events


def realise_events(
    rng: np.random.Generator,
    events: list[Event],
    wd: WorldDays,
    unit: float,
    n_days: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw outcome, magnitudes, tones and 8-K times; return (abnormal log-returns, volume spike)."""
    abnormal = np.zeros(n_days)
    spike = np.zeros(n_days)
    for ev in events:
        tp = P.TYPE_PARAMS[ev.event_type]
        ev.event_id = f"EV-{ev.ticker}-{wd.days[ev.d_idx].strftime('%Y%m%d')}"
        ev.unit = unit
        ev.d_short, ev.d_long = draw_config(rng, ev.event_type)
        ev.j, ev.l = draw_magnitudes(rng, ev.d_short, ev.d_long)
        ev.news_tone = draw_tone(rng, ev.d_short, tp.rho_news)
        has_8k = ev.quarterly or rng.random() < tp.p_8k
        if has_8k:
            ev.sec_tone = draw_tone(rng, ev.d_long, tp.rho_sec)
            if ev.k8_ns is None:
                ev.k8_ns = _k8_time(rng, ev, wd)
        d = ev.d_idx
        abnormal[d + 1] += ev.d_short * ev.j * unit
        for k in range(2, 2 + P.DRIFT_DAYS):
            abnormal[d + k] += ev.d_long * ev.l * unit / P.DRIFT_DAYS
        if ev.d_short:
            s = float(rng.uniform(1.0, 2.5))
            spike[d + 1] += s
            spike[d + 2] += 0.5 * s
            spike[d + 3] += 0.25 * s
        if ev.d_long:
            for k in range(2, 2 + P.DRIFT_DAYS):
                spike[d + k] += 0.2
        path = np.zeros(5)
        path[0] = ev.d_short * ev.j
        path[1:] = ev.d_long * ev.l / P.DRIFT_DAYS
        cum = np.cumsum(path)
        ev.car = tuple(float(cum[h - 1] * unit) for h in P.HORIZONS)
        ev.dirs = tuple(int(np.sign(cum[h - 1])) if abs(cum[h - 1]) > np.sqrt(h) else 0 for h in P.HORIZONS)
        ev.event_ns = min(ev.anchor_ns, ev.k8_ns) if ev.k8_ns is not None else ev.anchor_ns
    return abnormal, spike


def _k8_time(rng: np.random.Generator, ev: Event, wd: WorldDays) -> int:
    """8-K acceptance for a non-quarterly event: a few minutes before the anchor, same decision
    day; for weekend/holiday news, the next business day before the open (EDGAR is closed)."""
    d = ev.d_idx
    if ev.bucket == "non_trading_day":
        return et_ns(wd.days[d], int(rng.integers(6 * 3600 + 5 * 60, 9 * 3600)))
    lo = {
        "pre_market": et_ns(wd.days[d], 6 * 3600),
        "regular": int(wd.opens[d]) + MIN,
        "after_close": int(wd.closes[d - 1]) + MIN,
    }[ev.bucket]
    return max(lo, ev.anchor_ns - int(rng.integers(1, 5)) * MIN - int(rng.integers(0, 60)) * 10**9)
