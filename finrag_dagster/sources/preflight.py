"""Checks a command makes before it creates any Dagster run: settings that cannot work and source
paths that match nothing end the command in a second with their paragraph, instead of after Dagster
has planned every partition of the range (minutes on a five-year calendar) and the first step has
started. Nothing here imports Dagster, torch or the loaders."""

from __future__ import annotations

import datetime as dt

from ..core.settings import Settings
from .base import SourceError, expand_paths

NEWS_PATTERNS = ("*.csv", "*.parquet", "*.csv.gz")  # the news loader's directory patterns (registry.NEWS_PATTERNS)
PRICE_PATTERNS = ("*.csv", "*.parquet")
FILING_PATTERNS = ("full-submission.txt",)  # edgar._read_records: a folder means its full-submission.txt files


class SettingsError(ValueError):
    """Settings that validate one by one but cannot run together (dates out of order, a range outside the calendar)."""


def check_dates(s: Settings, start: dt.date | None = None, end: dt.date | None = None) -> None:
    """calendar.start <= calendar.decision_start <= calendar.end, and a requested decision range inside it."""
    c = s.calendar
    if c.end < c.start:
        raise SettingsError(f"calendar.end {c.end} is before calendar.start {c.start}")
    if not c.start <= c.decision_start <= c.end:
        raise SettingsError(f"calendar.decision_start {c.decision_start} must lie in calendar.start .. calendar.end ({c.start} .. {c.end})")
    if start is not None and end is not None and end < start:
        raise SettingsError(f"the last decision day {end} is before the first {start}")
    for what, d in (("first decision day", start), ("last decision day", end)):
        if d is not None and not c.start <= d <= c.end:
            raise SettingsError(f"the {what} {d} lies outside the settings' calendar {c.start} .. {c.end}")


def check_sources(s: Settings) -> None:
    """Every configured source path or glob of a ``files`` run names at least one file (the loaders'
    own rule, :func:`.base.expand_paths`), and the files every run needs are there."""
    src = s.sources
    if src.kind != "files":
        return
    if not src.universe:
        raise SourceError("sources.kind = 'files' needs sources.universe (a tickers.csv)")
    for key, patterns in (("universe", ("tickers.csv",)), ("membership", ("*.csv",))):  # the universe loaders' patterns
        value = getattr(src, key)
        if value:
            try:
                expand_paths([value], patterns)
            except SourceError as e:
                raise SourceError(f"sources.{key}: {e}") from None
    if not src.prices:
        raise SourceError("no price files configured (sources.prices): the calendar's bars and every label come from them")
    for key, patterns in (("news", NEWS_PATTERNS), ("prices", PRICE_PATTERNS), ("filings_index", FILING_PATTERNS), ("filings_text", FILING_PATTERNS)):
        for p in getattr(src, key):
            try:
                expand_paths([p], patterns)
            except SourceError as e:
                raise SourceError(f"sources.{key}: {e}") from None


def preflight(s: Settings, start: dt.date | None = None, end: dt.date | None = None) -> None:
    """:func:`check_dates` and :func:`check_sources`: what a run must pass before Dagster is asked for anything."""
    check_dates(s, start, end)
    check_sources(s)
