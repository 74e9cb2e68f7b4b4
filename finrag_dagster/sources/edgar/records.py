"""What one source says about one filing (:class:`FilingRecord`), and the value parsers the readers
share: accession numbers, UTC times, date-only acceptance times (public at the end of their New
York day, docs/time.md), dates and acceptance-source labels.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...core.calendar import date_only_public_ns
from .header import _yyyymmdd


@dataclass
class FilingRecord:
    """What one source says about one filing."""

    accession: str | None
    source: str  # acceptance-source label: submissions_json | sgml_header | ...
    source_file: str
    source_row: int
    file_index: int
    form_type: str | None = None
    cik: int | None = None
    company: str | None = None
    ticker: str | None = None
    accepted_ns: int | None = None
    filed_date: dt.date | None = None
    report_date: dt.date | None = None
    items: str = ""
    fye: str | None = None
    text: str = ""
    problem: str | None = None  # the whole source record is unusable (quarantined with this reason)
    conflict: str | None = None  # the record is readable but contradicts itself: its filing is quarantined
    tickers: tuple[str, ...] = ()  # the tickers the source gives itself (JSON ``tickers``, downloader folder)
    names: tuple[str, ...] = ()  # the company names the source gives itself (current and former)
    date_only: str | None = None  # the acceptance time as the source wrote it, when it is a date only


def _norm_accession(a: object) -> str | None:
    s = re.sub(r"\s", "", str(a or ""))
    digits = re.sub(r"\D", "", s)
    if len(digits) == 18:
        return f"{digits[:10]}-{digits[10:12]}-{digits[12:]}"
    return None


def _utc_ns(value: object) -> int | None:
    if value is None or value == "":
        return None
    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError):
        return None
    if ts is pd.NaT or pd.isna(ts):
        return None
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return int(ts.tz_convert("UTC").value)


_DATE_ONLY = re.compile(r"\s*(\d{4})-?(\d{2})-?(\d{2})\s*")


def _date_only_day(value: object) -> dt.date | None:
    """The day of an acceptance time that is a date only (``"2021-12-15"``, a ``date`` cell), else None."""
    if isinstance(value, dt.datetime):
        return None
    if isinstance(value, dt.date):
        return value
    m = _DATE_ONLY.fullmatch(value) if isinstance(value, str) else None
    if not m:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _acceptance_ns(value: object) -> tuple[int | None, str | None]:
    """(UTC ns, the value as written when it is a date only) of an acceptance time. A date only is
    public at the end of that New York day (23:59:59), never at its UTC midnight: read as midnight,
    a filing accepted after that day's close would be decided on that session (docs/time.md)."""
    day = _date_only_day(value)
    if day is None:
        return _utc_ns(value), None
    return int(date_only_public_ns(np.array([day], dtype="datetime64[D]"))[0]), str(value).strip()


def _acceptance_kw(value: object) -> dict:
    """``accepted_ns`` and ``date_only`` of a :class:`FilingRecord` from an acceptance time (:func:`_acceptance_ns`)."""
    ns, date_only = _acceptance_ns(value)
    return {"accepted_ns": ns, "date_only": date_only}


def _date(value: object) -> dt.date | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return _yyyymmdd(str(value))


def _source_label(raw: object, default: str) -> str:
    s = str(raw or "").lower()
    if "sgml" in s or "header" in s:
        return "sgml_header"
    if "matched" in s:
        return "submissions_json_matched"
    if "submissions" in s or "acceptancedatetime" in s:
        return "submissions_json"
    return re.sub(r"[^a-z0-9_]+", "_", s).strip("_") or default
