"""Wall-clock helpers: US/Eastern <-> UTC nanoseconds, the world's sessions, and formats."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import numpy as np

from ...core.calendar import TradingCalendar

ET = ZoneInfo("America/New_York")
UTC = dt.timezone.utc
NS = 1_000_000_000
MIN = 60 * NS


def et_ns(day: dt.date, seconds: int) -> int:
    """UTC nanoseconds of ``day`` + ``seconds`` after midnight, US/Eastern wall clock."""
    h, rem = divmod(int(seconds), 3600)
    m, s = divmod(rem, 60)
    local = dt.datetime(day.year, day.month, day.day, h, m, s, tzinfo=ET)
    return int(local.timestamp()) * NS


def to_et(ns: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ns // NS, tz=UTC).astimezone(ET)


def to_utc(ns: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ns // NS, tz=UTC)


def et_date(ns: int) -> dt.date:
    return to_et(ns).date()


def fnspid_time(ns: int) -> str:
    """FNSPID timed stamp ``YYYY-MM-DD HH:MM:SS+00:00`` (UTC)."""
    return to_utc(ns).strftime("%Y-%m-%d %H:%M:%S+00:00")


def fnspid_date(day: dt.date) -> str:
    """FNSPID date-only stamp: the date at 00:00:00 UTC."""
    return f"{day.isoformat()} 00:00:00+00:00"


def sec_acceptance_header(ns: int) -> str:
    """``<ACCEPTANCE-DATETIME>`` value: YYYYMMDDhhmmss, US/Eastern wall clock."""
    return to_et(ns).strftime("%Y%m%d%H%M%S")


def sec_acceptance_json(ns: int) -> str:
    """submissions JSON ``acceptanceDateTime``: UTC ISO with milliseconds and Z."""
    return to_utc(ns).strftime("%Y-%m-%dT%H:%M:%S.000Z")


@dataclass(frozen=True)
class WorldDays:
    """The world's trading days with their open/close times (UTC ns)."""

    days: tuple[dt.date, ...]
    opens: np.ndarray
    closes: np.ndarray

    @staticmethod
    def build(cal: TradingCalendar, start: dt.date, end: dt.date) -> "WorldDays":
        lo = int(np.searchsorted(cal.sessions, np.datetime64(start, "D"), side="left"))
        hi = int(np.searchsorted(cal.sessions, np.datetime64(end, "D"), side="right"))
        days = tuple(d.item() for d in cal.sessions[lo:hi])
        if len(days) < 30:
            raise ValueError(f"the world span {start}..{end} holds only {len(days)} trading days")
        return WorldDays(days, cal.opens_ns[lo:hi].copy(), cal.closes_ns[lo:hi].copy())

    def __len__(self) -> int:
        return len(self.days)

    def index_on_or_after(self, day: dt.date) -> int:
        """Position of the first session >= day (len(self) when none)."""
        import bisect

        return bisect.bisect_left(self.days, day)

    def decision_index(self, ns: int) -> int:
        """Index of the decision day (first close >= ns); len(self) if beyond the world."""
        return int(np.searchsorted(self.closes, ns, side="left"))

    def is_session(self, day: dt.date) -> bool:
        i = self.index_on_or_after(day)
        return i < len(self.days) and self.days[i] == day
