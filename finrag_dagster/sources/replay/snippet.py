"""The settings snippet `finrag replay` writes next to a landing folder."""

from __future__ import annotations

from pathlib import Path

import tomli_w

from ..news import NewsClock
from .clock import atomic_write
from .layout import FILINGS_DIR, NEWS_GLOB, PRICES_GLOB, REPLAY_DIR, SETTINGS_FILE, SUBMISSIONS_GLOB, UNIVERSE
from .replayer import _as_date

SNIPPET_HEADER = (
    "# finrag settings over a replay landing folder (written by `finrag replay`).\n"
    "# Use it with FINRAG_CONFIG=<this file>; lake_dir is where the pipeline writes.\n"
)


def _changed_sections(cur: dict, default: dict) -> dict:
    """The sections of ``cur`` (less lake, world, sources, calendar) with their non-default, set values."""
    out = {}
    for section, values in cur.items():
        if section in ("lake_dir", "world", "sources", "calendar") or not isinstance(values, dict):
            continue
        changed = {k: v for k, v in values.items() if v != default[section].get(k) and v is not None}
        if changed:
            out[section] = changed
    return out


def files_settings_toml(
    landing, lake_dir, base=None, *, first_day=None, last_day=None, market_ticker: str | None = None, news_clock: NewsClock = NewsClock()
) -> str:
    """A settings TOML that points finrag (files mode) at a landing folder.

    Parameters
    ----------
    landing, lake_dir : path
        The landing folder the sources are read from, and the lake the pipeline writes.
    base : Settings, optional
        Settings whose non-default sections (splits, variants, reader, ...) are carried over.
    first_day, last_day : date, optional
        ``calendar.decision_start`` and ``calendar.end`` (the replay window).
    market_ticker : str, optional
        Default: the base settings' market proxy.
    """
    from ...core.settings import Settings

    landing = Path(landing).resolve()
    base = base or Settings()
    default = Settings().model_dump()
    cur = base.model_dump()
    if market_ticker is None:
        market_ticker = base.market_ticker
    cal = dict(cur["calendar"])
    if first_day is not None:
        d0 = _as_date(first_day)
        cal["decision_start"] = d0
        cal["start"] = min(cal["start"], d0)
    if last_day is not None:
        cal["end"] = _as_date(last_day)
    sources = {
        "kind": "files",
        "universe": str(landing / UNIVERSE),
        "news": [str(landing / NEWS_GLOB)],
        "prices": [str(landing / PRICES_GLOB)],
        "filings_index": [str(landing / SUBMISSIONS_GLOB), str(landing / FILINGS_DIR)],
        "filings_text": [str(landing / FILINGS_DIR)],
        "market_ticker": market_ticker,
        "news_dates_only": news_clock.dates_only,
        "news_trusted_publishers": list(news_clock.trusted_publishers),
        "news_trusted_files": list(news_clock.trusted_files),
    }
    doc = {"lake_dir": str(Path(lake_dir).resolve()), "sources": sources, "calendar": cal, **_changed_sections(cur, default)}
    return SNIPPET_HEADER + tomli_w.dumps(doc)


def write_settings_snippet(landing, lake_dir, base=None, **kw) -> Path:
    """Write :func:`files_settings_toml` to ``<landing>/_replay/settings.toml``; returns the path."""
    p = Path(landing).resolve() / REPLAY_DIR / SETTINGS_FILE
    atomic_write(p, files_settings_toml(landing, lake_dir, base, **kw).encode("utf-8"))
    return p
