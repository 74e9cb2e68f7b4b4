"""What the EDGAR downloader fetches and where it writes it: the filings to download from a submissions
block (:func:`select_filings`), each one's URL and path in sec-edgar-downloader's layout
(:class:`FilingRef`), and the ticker -> CIK maps (docs/edgar_fetch.md).
"""

from __future__ import annotations

import csv
import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from .fetch_http import EdgarFetchError

DEFAULT_FORMS = ("8-K", "10-Q", "10-K")
TICKERS_FILE = "company_tickers.json"
SUBMISSIONS_DIR = "submissions"
FILINGS_DIR = "sec-edgar-filings"
DOC_NAME = "full-submission.txt"
PART_PREFIX = ".edgar-fetch-"
PART_SUFFIX = ".part"

_ACCESSION = re.compile(r"^\d{10}-\d{2}-\d{6}$")


@dataclass(frozen=True)
class FilingRef:
    """One filing to download."""

    ticker: str
    cik: int
    form: str
    accession: str
    accepted: str  # acceptanceDateTime as the submissions JSON gives it ("" if absent)

    @property
    def folder_form(self) -> str:
        """The form folder: amendments share their base form's (sec-edgar-downloader's convention)."""
        base = self.form[:-2] if self.form.upper().endswith("/A") else self.form
        return base.replace("/", "_").strip() or "UNKNOWN"

    def url(self, base_url: str) -> str:
        return f"{base_url.rstrip('/')}/Archives/edgar/data/{self.cik}/{self.accession.replace('-', '')}/{self.accession}.txt"

    def path(self, out: Path) -> Path:
        ticker = self.ticker.replace("/", "-").replace("\\", "-")
        return Path(out) / FILINGS_DIR / ticker / self.folder_form / self.accession / DOC_NAME


def expand_forms(forms: Iterable[str], include_amendments: bool = True) -> tuple[str, ...]:
    """Upper-case forms, each followed by its ``/A`` amendment when ``include_amendments``."""
    out: list[str] = []
    for f in forms:
        f = f.strip().upper()
        if not f:
            continue
        for g in (f, f + "/A") if include_amendments and not f.endswith("/A") else (f,):
            if g not in out:
                out.append(g)
    return tuple(out)


def _eastern_midnight_utc(day: dt.date) -> dt.datetime:
    try:
        from zoneinfo import ZoneInfo

        tz: dt.tzinfo = ZoneInfo("America/New_York")
    except Exception:  # no tz database: EST is close enough for a day boundary
        tz = dt.timezone(dt.timedelta(hours=-5))
    return dt.datetime.combine(day, dt.time(0), tzinfo=tz).astimezone(dt.timezone.utc)


def _accepted_utc(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def select_filings(block: dict, ticker: str, cik: int, forms: Sequence[str], since: dt.date) -> list[FilingRef]:
    """Filings of a submissions block (``filings.recent`` or an overflow page) to download.

    A filing is kept when its form is one of ``forms`` (exact, upper-case) and it was accepted on
    or after ``since`` 00:00 US/Eastern (``acceptanceDateTime`` is UTC); without an acceptance time
    its ``filingDate`` decides.
    """
    want = {f.upper() for f in forms}
    cutoff = _eastern_midnight_utc(since)
    accs = block.get("accessionNumber") or []
    n = len(accs)

    def arr(key: str) -> list:
        v = list(block.get(key) or [])
        return v + [None] * (n - len(v))

    out = []
    for acc, form, accepted, filed in zip(accs, arr("form"), arr("acceptanceDateTime"), arr("filingDate")):
        form = (form or "").strip().upper()
        acc = (acc or "").strip()
        if form not in want or not _ACCESSION.match(acc):
            continue
        t = _accepted_utc(accepted)
        if t is not None:
            if t < cutoff:
                continue
        elif not filed or str(filed)[:10] < since.isoformat():
            continue
        out.append(FilingRef(ticker=ticker, cik=int(cik), form=form, accession=acc, accepted=accepted or ""))
    return out


def read_universe_ciks(path: str | Path) -> dict[str, int]:
    """Ticker -> CIK from a universe CSV (columns ``ticker`` and ``cik``; ``cik_sp500`` as fallback)."""
    out: dict[str, int] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        cols = {c.strip().lower(): c for c in (reader.fieldnames or [])}
        if "ticker" not in cols or not ({"cik", "cik_sp500"} & set(cols)):
            raise EdgarFetchError(f"{path}: a universe CSV needs 'ticker' and 'cik' columns (has {reader.fieldnames})")
        for row in reader:
            t = (row.get(cols["ticker"]) or "").strip().upper()
            raw = next((row.get(cols[c]) for c in ("cik", "cik_sp500") if c in cols and (row.get(cols[c]) or "").strip()), "")
            try:
                cik = int(float(raw)) if raw else None
            except ValueError:
                cik = None
            if t and cik:
                out[t] = cik
    return out


def _norm_ticker(t: str) -> str:
    return t.strip().upper().replace(".", "-")


def _sec_ticker_map(doc: object) -> dict[str, int]:
    """Normalised ticker -> CIK from ``company_tickers.json`` ({"0": {"cik_str", "ticker", "title"}, ...})."""
    rows = doc.values() if isinstance(doc, dict) else (doc if isinstance(doc, list) else [])
    out: dict[str, int] = {}
    for r in rows:
        if isinstance(r, dict) and r.get("ticker") and r.get("cik_str") is not None:
            out.setdefault(_norm_ticker(str(r["ticker"])), int(r["cik_str"]))
    return out
