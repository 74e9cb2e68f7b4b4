"""Writing the landing folder atomically; the replay clock, its release log and the counts of a release."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...core.calendar import nyse
from ...core.storage.atomic import PLAIN, atomic_file
from .index import CsvSource
from .layout import CLOCK_FILE, REPLAY_DIR, ReplayError


def atomic_write(path: Path, data: bytes, base: Path | None = None) -> None:
    """Write ``path`` atomically; with ``base``, the new file is a copy of ``base`` with ``data`` appended."""
    with atomic_file(path, mode=PLAIN) as out:
        if base is not None:
            with open(base, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
        out.write(data)


def atomic_copy(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` atomically (temporary file + ``os.replace``)."""
    atomic_write(dst, b"", base=src)


def _write_csv_upto(src: CsvSource, path: Path, k: int) -> bool:
    """Make the landing CSV hold the header and the first ``k`` records; True if it was written.

    When the file already holds the first j <= k records (recognised by its size), only the new
    records are appended (to a copy, then moved into place); otherwise it is rebuilt.
    """
    j = None
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        size = None
    if size is not None:
        pos = int(np.searchsorted(src.cum, size))
        if pos < len(src.cum) and src.cum[pos] == size:
            j = pos
    if j == k:
        return False
    if j is not None and j < k:
        atomic_write(path, b"".join(src.records[j:k]), base=path)
    else:
        atomic_write(path, src.header + b"".join(src.records[:k]))
    return True


def _ts(ns: int) -> pd.Timestamp:
    return pd.Timestamp(int(ns), tz="UTC")


def _iso(ns: int) -> str:
    return _ts(ns).isoformat()


def to_ns(t: dt.datetime | pd.Timestamp | str) -> int:
    """A tz-aware time (or an ISO string with offset) as int64 UTC ns; naive times are refused."""
    ts = pd.Timestamp(t)
    if ts.tzinfo is None:
        raise ReplayError(f"naive time {t!r}: give the replay clock a time zone (UTC)")
    return int(ts.tz_convert("UTC").value)


def last_closed_session(t_ns: int) -> dt.date | None:
    """The last XNYS session whose close is at or before ``t_ns`` (None before the calendar)."""
    cal = nyse()
    i = int(np.searchsorted(cal.closes_ns, t_ns, side="right")) - 1
    return cal.sessions[i].item() if i >= 0 else None


def read_clock(landing: str | os.PathLike) -> dict | None:
    """``<landing>/_replay/clock.json`` as a dict, or None when the folder was never replayed into."""
    p = Path(landing) / REPLAY_DIR / CLOCK_FILE
    if not p.is_file():
        return None
    return json.loads(p.read_text(encoding="utf-8"))


def replay_now(settings) -> pd.Timestamp | None:
    """The replay clock of the landing folder a files-mode ``Settings`` reads, or None.

    The landing folder is the one holding the settings' universe file (``<landing>/universe/
    tickers.csv``). Sensors that ask "what time is it" can use this instead of the wall clock.
    """
    src = getattr(settings, "sources", None)
    if src is None or src.kind != "files" or not src.universe:
        return None
    clock = read_clock(Path(src.universe).parent.parent)
    return pd.Timestamp(clock["now"]).tz_convert("UTC") if clock else None


@dataclass
class ReleaseStats:
    """What one :meth:`Replayer.release_until` call released."""

    since: pd.Timestamp | None  # the clock before the call (None: first step on this landing)
    now: pd.Timestamp  # the clock after it
    news: int = 0
    prices: int = 0
    filings: int = 0
    files_written: int = 0
    last_closed_session: dt.date | None = None

    @property
    def total(self) -> int:
        return self.news + self.prices + self.filings

    def __add__(self, other: "ReleaseStats") -> "ReleaseStats":
        return ReleaseStats(
            since=self.since if self.since is not None else other.since,
            now=other.now,
            news=self.news + other.news,
            prices=self.prices + other.prices,
            filings=self.filings + other.filings,
            files_written=self.files_written + other.files_written,
            last_closed_session=other.last_closed_session,
        )
