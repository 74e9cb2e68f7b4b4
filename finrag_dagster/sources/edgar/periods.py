"""Fiscal periods of filings: (fiscal year, quarter) of a period end under a fiscal year end "MMDD",
and the quarter an 8-K's text names ("Q3 2024", "quarter ended September 28, 2024").
"""

from __future__ import annotations

import datetime as dt
import re

from .constants import FYE_SLACK_DAYS


def _fye(fye: str | None) -> tuple[int, int]:
    s = (fye or "").strip()
    if re.fullmatch(r"\d{4}", s) and 1 <= int(s[:2]) <= 12 and 1 <= int(s[2:]) <= 31:
        return int(s[:2]), int(s[2:])
    return 12, 31


def _fye_date(year: int, month: int, day: int) -> dt.date:
    last = (dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)).day
    return dt.date(year, month, min(day, last))


def fiscal_year_quarter(period_end: dt.date, fye: str | None) -> tuple[int, int]:
    """(fiscal year, quarter 1-4) of a period ending ``period_end``.

    The fiscal year is the calendar year in which it ends (``fye`` "MMDD", default 1231; a period
    ending up to FYE_SLACK_DAYS after the nominal day still belongs to that year, for 52/53-week
    years). The quarter counts ~91-day steps from the previous fiscal year end.
    """
    m, d = _fye(fye)
    slack = dt.timedelta(days=FYE_SLACK_DAYS)
    year = period_end.year - 1
    while period_end > _fye_date(year, m, d) + slack:
        year += 1
    prev = _fye_date(year - 1, m, d)
    q = int(round((period_end - prev).days / 91.31))
    return year, min(4, max(1, q))


_ORD = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_ORD_RE = r"(first|second|third|fourth|1st|2nd|3rd|4th)"
_MONTHS = r"(January|February|March|April|May|June|July|August|September|October|November|December)"
_PERIOD_PATTERNS = [
    ("fy_ord", re.compile(rf"\bfiscal\s+(?:year\s+)?(\d{{4}})\s+{_ORD_RE}\s+quarter", re.IGNORECASE)),
    ("ord_fy", re.compile(rf"\b{_ORD_RE}\s+(?:fiscal\s+)?quarter\s+(?:of\s+)?(?:fiscal\s+(?:year\s+)?)(\d{{4}})\b", re.IGNORECASE)),
    ("ended", re.compile(rf"\b(?:{_ORD_RE}\s+(?:fiscal\s+)?)?quarter\s+ended\s+{_MONTHS}\s+(\d{{1,2}}),?\s+(\d{{4}})", re.IGNORECASE)),
    ("q_n", re.compile(r"\bQ([1-4])\s*(?:of\s+)?(?:fiscal\s+(?:year\s+)?|FY\s*)?(\d{4})\b", re.IGNORECASE)),
    ("fyq", re.compile(r"\b(?:fiscal\s+(?:year\s+)?|FY\s*)(\d{4})\s+Q([1-4])\b", re.IGNORECASE)),
    ("ord_cal", re.compile(rf"\b{_ORD_RE}\s+quarter\s+(?:of\s+)?(\d{{4}})\b", re.IGNORECASE)),
]


def period_in_text(text: str, fye: str | None = None, limit: int = 20000) -> str | None:
    """The first fiscal quarter an 8-K's text names ("Q3 2024"), or None.

    Recognises "fiscal 2024 third quarter", "third quarter of fiscal 2024", "Q3 2024",
    "FY2024 Q3", "third quarter 2024" and "quarter ended September 28, 2024" (mapped through the
    fiscal year end ``fye``; a stated ordinal, "fourth fiscal quarter ended ...", wins over the
    computed quarter).
    """
    head = text[:limit]
    best: tuple[int, str] | None = None
    for kind, pat in _PERIOD_PATTERNS:
        m = pat.search(head)
        if not m or (best is not None and m.start() >= best[0]):
            continue
        if kind == "fy_ord":
            out = f"Q{_ORD[m.group(2).lower()]} {m.group(1)}"
        elif kind in ("ord_fy", "ord_cal"):
            out = f"Q{_ORD[m.group(1).lower()]} {m.group(2)}"
        elif kind == "ended":
            try:
                end = dt.datetime.strptime(f"{m.group(2)} {m.group(3)} {m.group(4)}", "%B %d %Y").date()
            except ValueError:
                continue
            fy, q = fiscal_year_quarter(end, fye)
            out = f"Q{_ORD[m.group(1).lower()] if m.group(1) else q} {fy}"
        elif kind == "q_n":
            out = f"Q{m.group(1)} {m.group(2)}"
        else:  # fyq
            out = f"Q{m.group(2)} {m.group(1)}"
        best = (m.start(), out)
    return best[1] if best else None


def fiscal_period(form_type: str, report_date: dt.date | None, fye: str | None, text: str = "") -> str | None:
    """ "Qn YYYY" for 10-Q, "FYYYYY" for 10-K (from the report date), the text's period for 8-K."""
    form = (form_type or "").upper()
    if form.startswith("10-Q") and report_date:
        fy, q = fiscal_year_quarter(report_date, fye)
        return f"Q{q} {fy}"
    if form.startswith("10-K") and report_date:
        return f"FY{fiscal_year_quarter(report_date, fye)[0]}"
    if form.startswith("8-K") and text:
        return period_in_text(text, fye)
    return None
