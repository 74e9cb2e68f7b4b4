"""The landing folder's layout, and when a price bar is public (the loaders' rules)."""

from __future__ import annotations

import numpy as np
import polars as pl

from ...core.calendar import date_only_public_ns, nyse

UNIVERSE = "universe/tickers.csv"
NEWS_GLOB = "news/*.csv"
PRICES_GLOB = "prices/*.csv"
SUBMISSIONS_GLOB = "sec/submissions/*.json"
FILINGS_DIR = "sec/sec-edgar-filings"
FULL_SUBMISSION = "full-submission.txt"
REPLAY_DIR = "_replay"
CLOCK_FILE = "clock.json"
RELEASE_LOG = "releases.jsonl"
SETTINGS_FILE = "settings.toml"

NEVER = np.iinfo(np.int64).max  # public time of an item without a readable time: never released
_DAY_NS = 86_400 * 10**9


class ReplayError(ValueError):
    """The replay cannot go on as asked (wrong source for this landing folder, bad dates...)."""


def price_public_ns(date_raw: pl.Series) -> np.ndarray:
    """Public time (int64 UTC ns) of price bars from their raw date strings.

    The date is parsed as the price loader does (first 10 characters, ``%Y-%m-%d``). A bar of a
    session D exists once close(D) has passed (early closes included); a bar dated on a day that
    is not a session (the loader quarantines it) at 23:59:59 New York of that day; :data:`NEVER`
    when the date is unreadable.
    """
    if len(date_raw) == 0:
        return np.zeros(0, dtype=np.int64)
    dates = pl.DataFrame({"d": date_raw.cast(pl.Utf8)}).select(pl.col("d").str.strip_chars().str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False))[
        "d"
    ]
    valid = ~dates.is_null().to_numpy()
    days = dates.to_numpy().astype("datetime64[D]")
    cal = nyse()
    out = np.full(len(days), NEVER, dtype=np.int64)
    if not valid.any():
        return out
    vd = days[valid]
    pos = np.clip(np.searchsorted(cal.sessions, vd), 0, len(cal.sessions) - 1)
    is_session = cal.sessions[pos] == vd
    pub = np.where(is_session, cal.closes_ns[pos], date_only_public_ns(vd))
    out[valid] = pub
    return out
