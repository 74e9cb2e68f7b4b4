"""Trading-day time: the NYSE calendar and the decision-day rule of docs/method.md §1.

Every timestamp in the lake is UTC. Market logic uses America/New_York and the XNYS
calendar from ``exchange_calendars`` (holidays, early closes and DST come from there,
not from a hand-written list).

Decision rule (docs/method.md §1, seed 000 §3.3 / App. A.2): the decision day D of an item published at
``public_time`` is the trading day whose close is the first close at or after ``public_time``;
``decision_time`` is close(D). Items that only carry a calendar date (most FNSPID rows:
``YYYY-MM-DD 00:00:00+00:00``) are treated as published after that day's close: their
``public_time`` becomes 23:59:59 America/New_York of that date, so they are decided on the
next session and are never visible to a decision on their own date.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import tempfile
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from .settings import CALENDAR_FIRST, CALENDAR_LAST, HORIZONS

NY = "America/New_York"
CALENDAR_NAME = "XNYS"
# The calendar object is built once for a wide window (settings.CALENDAR_FIRST .. CALENDAR_LAST,
# which the settings check every calendar date against); narrower ranges slice it.
_CAL_START = CALENDAR_FIRST.isoformat()
_CAL_END = CALENDAR_LAST.isoformat()


class CalendarError(ValueError):
    """A date or time falls outside the trading calendar's known range, or is not a session."""


@dataclass(frozen=True)
class TradingCalendar:
    """Sessions and closes of XNYS as numpy arrays for vectorised lookups."""

    sessions: np.ndarray  # datetime64[D], ascending
    closes_ns: np.ndarray  # int64 UTC nanoseconds of each session's close
    opens_ns: np.ndarray  # int64 UTC nanoseconds of each session's open

    # ----------------------------------------------------------------- construction
    @staticmethod
    @lru_cache(maxsize=1)
    def nyse() -> "TradingCalendar":
        """XNYS from exchange_calendars, through a file cache of its three arrays (:func:`_cached_arrays`)."""
        sessions, closes, opens = _cached_arrays()
        return TradingCalendar(sessions=sessions, closes_ns=closes, opens_ns=opens)

    # ----------------------------------------------------------------- sessions
    def sessions_in_range(self, start: dt.date | str, end: dt.date | str) -> list[dt.date]:
        """Trading days in [start, end] (inclusive)."""
        lo = np.searchsorted(self.sessions, np.datetime64(_as_date(start), "D"), side="left")
        hi = np.searchsorted(self.sessions, np.datetime64(_as_date(end), "D"), side="right")
        return [d.item() for d in self.sessions[lo:hi]]

    def is_session(self, day: dt.date | str) -> bool:
        d = np.datetime64(_as_date(day), "D")
        i = np.searchsorted(self.sessions, d)
        return bool(i < len(self.sessions) and self.sessions[i] == d)

    def session_index(self, day: dt.date | str) -> int:
        """Position of a trading day in the calendar; error if it is not a session."""
        d = np.datetime64(_as_date(day), "D")
        i = int(np.searchsorted(self.sessions, d))
        if i >= len(self.sessions) or self.sessions[i] != d:
            raise CalendarError(f"{_as_date(day)} is not an XNYS trading day")
        return i

    def offset(self, day: dt.date | str, n: int) -> dt.date:
        """The trading day ``n`` sessions after (n>0) or before (n<0) a trading day."""
        i = self.session_index(day) + n
        if i < 0 or i >= len(self.sessions):
            raise CalendarError(f"{_as_date(day)} {n:+d} sessions is outside the calendar")
        return self.sessions[i].item()

    def next_session(self, day: dt.date | str) -> dt.date:
        """First trading day strictly after a calendar date."""
        d = np.datetime64(_as_date(day), "D")
        i = int(np.searchsorted(self.sessions, d, side="right"))
        return self.sessions[i].item()

    def previous_session(self, day: dt.date | str) -> dt.date:
        """Last trading day strictly before a calendar date."""
        d = np.datetime64(_as_date(day), "D")
        i = int(np.searchsorted(self.sessions, d, side="left")) - 1
        if i < 0:
            raise CalendarError(f"no session before {_as_date(day)}")
        return self.sessions[i].item()

    def close_time(self, day: dt.date | str) -> pd.Timestamp:
        """decision_time of a trading day: its close in UTC (early closes included)."""
        return pd.Timestamp(int(self.closes_ns[self.session_index(day)]), tz="UTC")

    def open_time(self, day: dt.date | str) -> pd.Timestamp:
        return pd.Timestamp(int(self.opens_ns[self.session_index(day)]), tz="UTC")

    # ----------------------------------------------------------------- decision rule
    def decision_day(self, public_time: pd.Timestamp | dt.datetime | str) -> dt.date:
        """docs/method.md §1: the trading day whose close is the first close at or after public_time."""
        ts = pd.Timestamp(public_time)
        if ts.tzinfo is None:
            raise CalendarError(f"naive timestamp {public_time!r}: store times as UTC")
        return self.decision_days(np.array([ts.tz_convert("UTC").value], dtype=np.int64))[0].item()

    def decision_days(self, public_ns: np.ndarray) -> np.ndarray:
        """Vectorised decision days for int64 UTC nanoseconds (datetime64[D] result)."""
        public_ns = np.asarray(public_ns, dtype=np.int64)
        idx = np.searchsorted(self.closes_ns, public_ns, side="left")
        if len(idx) and (idx.max() >= len(self.closes_ns) or public_ns.min() < self.opens_ns[0] - 86400 * 10**9 * 30):
            raise CalendarError("a public_time lies outside the XNYS calendar range")
        return self.sessions[idx]

    def decision_close_ns(self, public_ns: np.ndarray) -> np.ndarray:
        """close(decision_day) for each public time, int64 UTC ns."""
        idx = np.searchsorted(self.closes_ns, np.asarray(public_ns, dtype=np.int64), side="left")
        return self.closes_ns[idx]

    def closes_for(self, days: np.ndarray) -> np.ndarray:
        """Close (int64 UTC ns) of each trading day in a datetime64[D] array."""
        days = np.asarray(days, dtype="datetime64[D]")
        idx = np.searchsorted(self.sessions, days)
        if len(idx) and (idx.max() >= len(self.sessions) or not np.all(self.sessions[idx] == days)):
            raise CalendarError("closes_for() got a day that is not a trading day")
        return self.closes_ns[idx]


def _as_date(x: dt.date | dt.datetime | str | np.datetime64 | pd.Timestamp) -> dt.date:
    if isinstance(x, str):
        return dt.date.fromisoformat(x[:10])
    if isinstance(x, pd.Timestamp):
        return x.date()
    if isinstance(x, dt.datetime):
        return x.date()
    if isinstance(x, np.datetime64):
        return x.astype("datetime64[D]").item()
    return x


def date_only_public_time(day: dt.date | str) -> pd.Timestamp:
    """Availability time of a date-only item: 23:59:59 America/New_York of that date (UTC)."""
    d = _as_date(day)
    return pd.Timestamp(dt.datetime(d.year, d.month, d.day, 23, 59, 59), tz=NY).tz_convert("UTC")


def date_only_public_ns(days: np.ndarray) -> np.ndarray:
    """Vectorised :func:`date_only_public_time` for datetime64[D] days, int64 UTC ns."""
    idx = pd.DatetimeIndex(np.asarray(days, dtype="datetime64[D]").astype("datetime64[ns]"))
    local = (idx + pd.Timedelta(hours=23, minutes=59, seconds=59)).tz_localize(NY, ambiguous=False, nonexistent="shift_forward")
    return local.tz_convert("UTC").asi8


def eastern_to_utc(local: str | dt.datetime) -> pd.Timestamp:
    """A naive US/Eastern wall-clock time (e.g. EDGAR ``<ACCEPTANCE-DATETIME>``) to UTC."""
    ts = pd.Timestamp(local)
    if ts.tzinfo is not None:
        return ts.tz_convert("UTC")
    return ts.tz_localize(NY, ambiguous=True, nonexistent="shift_forward").tz_convert("UTC")


def maturing_on(cal: TradingCalendar, day: dt.date | str, first_day: str = "") -> list[tuple[str, int]]:
    """(decision day D, horizon h) whose h-day label matures at close(``day``): D = ``day`` − h
    sessions, D ≥ ``first_day`` (SPEC §1: feedback of (D, h) is released only after close(D+h)).
    The one maturity rule: the loop's memory updates and the matured-feedback sensor both ask it."""
    i = cal.session_index(day)
    out = []
    for h in HORIZONS:
        if i - h >= 0 and (d := cal.sessions[i - h].item().isoformat()) >= first_day:
            out.append((d, h))
    return out


def lookback_days(cal: TradingCalendar, first: str, n: int, earliest: dt.date) -> list[str]:
    """The ``n`` sessions before ``first`` (ISO days) that are not before ``earliest``."""
    i = cal.session_index(first)
    out = []
    for k in range(n, 0, -1):
        if i - k >= 0:
            d = cal.sessions[i - k].item()
            if d >= earliest:
                out.append(d.isoformat())
    return out


def overdue_sessions(cal: TradingCalendar, first: dt.date | str, now: pd.Timestamp, due: dt.time, done: set[str], window: int) -> list[str]:
    """The sessions from ``first`` whose output was due at ``due`` New York time on that day, ``now``
    (UTC) is past that, and that are not in ``done`` (ISO days): the last ``window`` due sessions only."""
    now_ny = now.tz_convert(NY)
    last = now_ny.date() if now_ny.time() >= due else now_ny.date() - dt.timedelta(days=1)
    if _as_date(first) > last:
        return []
    sessions = [d.isoformat() for d in cal.sessions_in_range(first, last)][-window:] if window > 0 else []
    return [d for d in sessions if d not in done]


def nyse() -> TradingCalendar:
    return TradingCalendar.nyse()


def _fabricate() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sessions, closes ns, opens ns) of XNYS over the calendar's window, from exchange_calendars."""
    import exchange_calendars as xc

    cal = xc.get_calendar(CALENDAR_NAME, start=_CAL_START, end=_CAL_END)
    sessions = cal.sessions.values.astype("datetime64[D]")
    closes = cal.closes.values.astype("datetime64[ns]").astype(np.int64)
    opens = cal.opens.values.astype("datetime64[ns]").astype(np.int64)
    return sessions, closes, opens


def calendar_cache_file() -> Path:
    """Where the arrays of :func:`_fabricate` are kept: one file per exchange_calendars and pandas
    release (their holiday rules) and calendar window, under ``$XDG_CACHE_HOME/finrag`` or
    ``~/.cache/finrag``."""
    from importlib.metadata import version

    key = f"{CALENDAR_NAME}|{_CAL_START}|{_CAL_END}|exchange_calendars {version('exchange_calendars')}|pandas {pd.__version__}|v1"
    tag = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "finrag" / "calendars" / f"{CALENDAR_NAME}-{tag}.npz"


def _cached_arrays() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The calendar's arrays from the cache file, else fabricated (about 0.4 s: importing
    exchange_calendars and computing 31 years of holidays, in every process that needs the calendar:
    each CLI command, each Dagster step) and written there atomically. A file that does not read back
    as three arrays of the expected kinds is fabricated again; an unwritable cache is only slower."""
    path = calendar_cache_file()
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = z["sessions"], z["closes_ns"], z["opens_ns"]
        if arrays[0].dtype == np.dtype("datetime64[D]") and arrays[1].dtype == arrays[2].dtype == np.int64 and len({len(a) for a in arrays}) == 1:
            return arrays
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        pass
    arrays = _fabricate()
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".npz", delete=False) as f:
            tmp = f.name
            np.savez(f, sessions=arrays[0], closes_ns=arrays[1], opens_ns=arrays[2])
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return arrays
