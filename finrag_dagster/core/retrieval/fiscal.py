"""Fiscal periods the way each company counts them, as known at the query's as-of time.

A query's "Q3 2023", "Q3 FY2023" or "third quarter" names a fiscal quarter of the companies it
names. Filing passages carry the company's own fiscal label (from its fiscal-year end), so a label
matches filings directly; news carries no label, so the period becomes a date window: the quarter
(or year) itself and the reporting weeks after it, when results, calls and the 10-Q come out.

What is known at the as-of time decides the calendar: the fiscal-year end is the report date's
month and day of the company's latest 10-K accepted before as-of (calendar quarters when there is
none), and a quarter's exact end is the report date of its own 10-Q or 10-K when one was accepted
before as-of (52/53-week years end on varying days), else the month end counted from the fiscal-year
end. Every interpretation is written out in the result.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import polars as pl

REPORTING_DAYS = 60  # news about a period keeps coming this long after it ends (results, 10-Q deadline 40-45 days)


def _month_end(year: int, month: int) -> dt.date:
    while month > 12:
        year, month = year + 1, month - 12
    while month < 1:
        year, month = year - 1, month + 12
    return dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)


@dataclass
class FiscalCalendar:
    """One company's fiscal calendar as known at a time."""

    ticker: str
    fye_month: int = 12  # month of the fiscal-year end
    source: str = "calendar quarters (no 10-K before the as-of date)"
    ends: dict[str, dt.date] = field(default_factory=dict)  # label -> report date of a filing known before as-of

    def period_end(self, label: str) -> dt.date:
        """End of "Qn YYYY" or "FYYYYY" (fiscal year named by the calendar year it ends in)."""
        if label in self.ends:
            return self.ends[label]
        if label.startswith("FY"):
            return _month_end(int(label[2:]), self.fye_month)
        q, y = int(label[1]), int(label.split()[1])
        return _month_end(y - 1, self.fye_month + 3 * q)

    def period_start(self, label: str) -> dt.date:
        if label.startswith("FY"):
            prev = f"FY{int(label[2:]) - 1}"
        else:
            q, y = int(label[1]), int(label.split()[1])
            prev = f"Q{q - 1} {y}" if q > 1 else f"FY{y - 1}"
        return self.period_end(prev) + dt.timedelta(days=1)

    def latest_quarter(self, q: int, as_of: dt.date) -> str:
        """The most recent fiscal quarter number ``q`` that ended before ``as_of``."""
        for y in range(as_of.year + 1, as_of.year - 3, -1):
            label = f"Q{q} {y}"
            if self.period_end(label) < as_of:
                return label
        return f"Q{q} {as_of.year - 1}"

    def describe(self, label: str) -> str:
        start, end = self.period_start(label), self.period_end(label)
        exact = "its filing's report date" if label in self.ends else "month ends counted from the fiscal-year end"
        return (
            f"{self.ticker} {label}: fiscal {'year' if label.startswith('FY') else 'quarter'} {start} .. {end} "
            f"({self.source}; {exact}); news {start} .. {end + dt.timedelta(days=REPORTING_DAYS)}"
        )


def calendars(filings: pl.DataFrame, tickers: list[str], as_of_ns: int) -> dict[str, FiscalCalendar]:
    """Fiscal calendars of ``tickers`` from filing rows (ticker, form_type, public_time, report_date,
    fiscal_period) accepted before ``as_of_ns``."""
    out = {t: FiscalCalendar(t) for t in tickers}
    if filings.height == 0:
        return out
    as_of = dt.datetime.fromtimestamp(as_of_ns / 1e9, tz=dt.timezone.utc)
    known = filings.filter(
        pl.col("ticker").is_in(tickers)
        & (pl.col("public_time") < as_of)
        & pl.col("report_date").is_not_null()
        & pl.col("form_type").str.contains(r"^10-[KQ]")
    ).sort("public_time")
    for t, form, pub, rep, label in known.select("ticker", "form_type", "public_time", "report_date", "fiscal_period").iter_rows():
        c = out[t]
        if form.startswith("10-K"):
            c.fye_month = rep.month if rep.day > 15 else (rep.month - 1 or 12)  # 52/53-week years end near a month end
            c.source = f"fiscal year ends in month {c.fye_month}, from its 10-K accepted {pub.date()}"
        if label:
            c.ends[label] = rep
            if label.startswith("FY"):
                c.ends[f"Q4 {label[2:]}"] = rep
    return out
