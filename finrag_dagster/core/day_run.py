"""What a stage over a range of decision days reads: settings, lake, calendar and the days, made
once per step (``FinragResource.day_run``) and handed on instead of four parameters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .calendar import TradingCalendar
    from .settings import Settings
    from .storage.lake import Lake


@dataclass(frozen=True)
class DayRun:
    settings: Settings
    lake: Lake  # a local folder or an object store
    cal: TradingCalendar
    days: list[str]  # ISO decision days, in order
