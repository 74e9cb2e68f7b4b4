"""The evaluation splits (train / validation / test) on the trading calendar.

The prequential protocol (seed 000 §4.1): the memories reset at each split start, a split's class
weights come from the previous split's matured labels, and the prior experience tree is induced on
the last train session from train-split anchors only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .settings import SPLIT_NAMES

if TYPE_CHECKING:
    from .calendar import TradingCalendar
    from .settings import Settings
    from .storage.lake import Lake


def split_bounds(s: Settings, cal: TradingCalendar) -> list[tuple[str, str]]:
    """(first session, last session) of train / validation / test, in order (splits without a
    session left out)."""
    out = []
    for a, b in s.splits.ranges().values():
        days = cal.sessions_in_range(a, b)
        if days:
            out.append((days[0].isoformat(), days[-1].isoformat()))
    return out


def bounds_of_test_split(s: Settings, cal: TradingCalendar) -> tuple[str, str] | None:
    """(first, last session) of the test split, when all three splits have sessions."""
    bounds = split_bounds(s, cal)
    return dict(zip(SPLIT_NAMES, bounds))["test"] if len(bounds) == len(SPLIT_NAMES) else None


def lora_first_day(s: Settings, cal: TradingCalendar) -> str | None:
    """The first decision day a LoRA variant may read: its adapter is fitted on train labels and
    chosen on validation labels matured before the test split starts, so a decision before that
    day would read with hindsight (seed 000 reports the LoRA rows on the test split only)."""
    b = dict(zip(SPLIT_NAMES, split_bounds(s, cal)))
    if "test" in b:
        return b["test"][0]
    return cal.offset(b["validation"][1], 1).isoformat() if "validation" in b else None


def lora_days(s: Settings, cal: TradingCalendar, days: list[str]) -> list[str]:
    """The days of ``days`` a LoRA variant reads (from :func:`lora_first_day` on)."""
    first = lora_first_day(s, cal)
    return [d for d in days if first is not None and d >= first]


def split_start_of(s: Settings, cal: TradingCalendar, day: str) -> str:
    """The day the memory resets for a decision on ``day`` (prequential protocol)."""
    for a, b in split_bounds(s, cal):
        if a <= day <= b:
            return a
    first = cal.sessions_in_range(s.calendar.decision_start, s.calendar.end)
    return first[0].isoformat() if first and first[0].isoformat() <= day else day


def split_days(s: Settings, cal: TradingCalendar, lake: Lake, name: str) -> list[str]:
    """Materialised decision days of a split (those whose anchors are in the lake)."""
    b = s.splits.ranges()[name]
    have = set(lake.materialized_dates("anchors"))
    return [d.isoformat() for d in cal.sessions_in_range(*b) if d.isoformat() in have]


def induction_day(s: Settings, cal: TradingCalendar) -> str | None:
    """The day the tree is induced: the last session of the train split (inside the calendar)."""
    a, b = s.splits.train
    days = cal.sessions_in_range(max(a, s.calendar.start), min(b, s.calendar.end))
    return days[-1].isoformat() if days else None


def train_days_before(s: Settings, cal: TradingCalendar, day: str) -> list[str]:
    """Sessions of the train split (inside the calendar) strictly before ``day``."""
    a, b = s.splits.train
    return [d.isoformat() for d in cal.sessions_in_range(max(a, s.calendar.start), min(b, s.calendar.end)) if d.isoformat() < day]
