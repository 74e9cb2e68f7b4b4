"""EDGAR filings (submissions JSON, SGML full submissions, sample parquets) -> ``filings_raw``.

Rows of one accession from several sources are merged; ``public_time`` is the latest known
acceptance time (conservative), never the filing date: a filing without an acceptance time is
quarantined. Sources that contradict themselves are never read silently. The formats read, the
merge and the ``rows_in`` count: docs/bad_inputs.md, "Filings (EDGAR)" and "`sources/edgar.py`:
design notes"; the time rules: docs/time.md, "Filings (EDGAR)".
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl

from ..core.calendar import date_only_public_ns, eastern_to_utc, nyse
from ..core.storage.schemas import FILINGS_RAW
from .base import FLAG_COLUMNS, LoadResult, SourceError, bom_encoding, empty_flags, empty_quarantine, expand_paths, quarantine_rows
from .universe import company_aliases

FORMS_USED = ("8-K", "8-K/A", "10-Q", "10-Q/A", "10-K", "10-K/A")
R_NO_ACCESSION = "missing accession"
R_FORM = "form not used"
R_NO_TICKER = "ticker not in universe"
R_NO_TIME = "no acceptance time"
R_OUT_OF_CALENDAR = "public time outside the trading calendar"
R_UNEQUAL_ARRAYS = "submissions JSON arrays of unequal length"
R_MISSING_ARRAYS = "submissions JSON without the arrays a filing needs"  # followed by ": form"
NEEDED_ARRAYS = ("form", "acceptanceDateTime", "filingDate")  # what a filing's type, public time and its cross-check read
R_CORRUPT = "unreadable filing file"
R_ACCEPTANCE_VS_FILED = "acceptance time inconsistent with the filing date"
# EDGAR dates a filing accepted after 17:30 New York time (or on a holiday) on the next business
# day, so the acceptance's New York date is the filing date or a few calendar days before it (a
# Friday evening before a Monday holiday: 4); anything else is a source that contradicts itself.
ACCEPTANCE_BEFORE_FILED_MAX_DAYS = 4
# The largest full-submission.txt read (a 10-K with every exhibit is tens of MB); a larger file is
# quarantined unread, so one file cannot take the loader's memory
MAX_SUBMISSION_BYTES = 256 << 20
# Sources that contradict themselves about which filing or company they are (docs/bad_inputs.md):
R_CIK_VS_FILE = "submissions JSON cik contradicts its file name"
R_TICKER_VS_SOURCE = "universe ticker of the CIK contradicts the source's own ticker"
R_TRUNCATED = "full-submission.txt truncated"
R_TWO_ACCESSIONS = "full-submission.txt names two accessions"
R_HEADER_TWICE = "full-submission.txt header gives one of its fields twice"
# Header fields a submission has once (a filer's COMPANY DATA, FORM TYPE or FISCAL YEAR END repeat per filer)
UNIQUE_HEADER_FIELDS = ("ACCESSION NUMBER", "CONFORMED SUBMISSION TYPE", "PUBLIC DOCUMENT COUNT", "CONFORMED PERIOD OF REPORT", "FILED AS OF DATE")
F_SHARED_CIK = "shared_cik"
# An acceptance time given as a date only ("2021-12-15") is public at the end of that New York day
# (23:59:59), as a date-only news stamp is (docs/time.md), so it is decided on the next session
F_DATE_ONLY = "date_only_acceptance"
# A submissions JSON lists each filing once: a second entry of an accession is quarantined (the
# later acceptance time is kept: it never lets a decision see the filing early)
R_DUPLICATE = "accession listed twice in one submissions JSON"
DEFAULT_FYE = "1231"
FYE_SLACK_DAYS = 14  # 52/53-week fiscal years end up to a week either side of the nominal day

# 8-K item numbers by the descriptions used in SGML headers (ITEM INFORMATION).
ITEM_DESCRIPTIONS = {
    "entry into a material definitive agreement": "1.01",
    "termination of a material definitive agreement": "1.02",
    "bankruptcy or receivership": "1.03",
    "mine safety - reporting of shutdowns and patterns of violations": "1.04",
    "material cybersecurity incidents": "1.05",
    "completion of acquisition or disposition of assets": "2.01",
    "results of operations and financial condition": "2.02",
    "creation of a direct financial obligation or an obligation under an off-balance sheet arrangement of a registrant": "2.03",
    "triggering events that accelerate or increase a direct financial obligation or an obligation under an off-balance sheet arrangement": "2.04",
    "costs associated with exit or disposal activities": "2.05",
    "material impairments": "2.06",
    "notice of delisting or failure to satisfy a continued listing rule or standard; transfer of listing": "3.01",
    "unregistered sales of equity securities": "3.02",
    "material modifications to rights of security holders": "3.03",
    "changes in registrant's certifying accountant": "4.01",
    "non-reliance on previously issued financial statements or a related audit report or completed interim review": "4.02",
    "changes in control of registrant": "5.01",
    "departure of directors or certain officers; election of directors; appointment of certain officers: compensatory arrangements of certain officers": "5.02",
    "amendments to articles of incorporation or bylaws; change in fiscal year": "5.03",
    "temporary suspension of trading under registrant's employee benefit plans": "5.04",
    "amendments to the registrant's code of ethics, or waiver of a provision of the code of ethics": "5.05",
    "change in shell company status": "5.06",
    "submission of matters to a vote of security holders": "5.07",
    "shareholder director nominations": "5.08",
    "regulation fd disclosure": "7.01",
    "other events": "8.01",
    "financial statements and exhibits": "9.01",
}


# ============================================================================ SGML header
_HDR_FIELD = re.compile(r"^[ \t]*([A-Z][A-Z0-9 \-/]+?):[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_ACCEPT = re.compile(r"<ACCEPTANCE-DATETIME>\s*(\d{14})")
_SECDOC = re.compile(r"<SEC-DOCUMENT>\s*(\d{10}-\d{2}-\d{6})")


def _yyyymmdd(s: str | None) -> dt.date | None:
    s = (s or "").strip().replace("-", "")
    if len(s) < 8 or not s[:8].isdigit():
        return None
    try:
        return dt.date(int(s[:4]), int(s[4:6]), int(s[6:8]))
    except ValueError:
        return None


def _whole_lines(text: str) -> str:
    """The text up to its last line break: a header excerpt cut mid-line must not give a cut value."""
    return text if text.endswith("\n") else text[: text.rfind("\n") + 1]


def _item_number(desc: str) -> str:
    d = re.sub(r"\s+", " ", desc.strip().lower()).replace("\u2019", "'")
    if re.fullmatch(r"\d\.\d{2}", d):
        return d
    return ITEM_DESCRIPTIONS.get(d, "")


def parse_submission_header(text: str) -> dict:
    """Fields of an EDGAR SGML submission header.

    Parameters
    ----------
    text : str
        A ``full-submission.txt`` (or just its first bytes).

    Returns
    -------
    dict
        ``accession`` (str|None), ``form_type`` (str|None), ``acceptance_utc`` (pd.Timestamp UTC
        or None; the header's US/Eastern wall-clock converted), ``period_of_report`` and
        ``filed_date`` (date|None), ``cik`` (int|None, first filer), ``company`` (str|None),
        ``fiscal_year_end`` ("MMDD"|None), ``items`` (8-K item numbers, comma-separated, "" if none),
        ``repeated`` ("FIELD (a, b)" for each field of a submission's own given twice with different
        values, "; "-separated, or None).
    """
    end = text.find("</SEC-HEADER>")
    head = text[:end] if end >= 0 else _whole_lines(text)
    fields: dict[str, list[str]] = {}
    for k, v in _HDR_FIELD.findall(head):
        fields.setdefault(k.strip(), []).append(v.strip())

    def first(key: str) -> str | None:
        vals = [v for v in fields.get(key, []) if v]
        return vals[0] if vals else None

    acc = first("ACCESSION NUMBER")
    if not acc:
        m = _SECDOC.search(head)
        acc = m.group(1) if m else None
    m = _ACCEPT.search(head)
    accepted = None
    if m:
        try:
            accepted = eastern_to_utc(dt.datetime.strptime(m.group(1), "%Y%m%d%H%M%S"))
        except ValueError:
            accepted = None
    cik = first("CENTRAL INDEX KEY")
    items = [_item_number(v) for v in fields.get("ITEM INFORMATION", [])]
    fye = first("FISCAL YEAR END")
    return {
        "accession": acc,
        "form_type": first("CONFORMED SUBMISSION TYPE") or first("FORM TYPE"),
        "acceptance_utc": accepted,
        "period_of_report": _yyyymmdd(first("CONFORMED PERIOD OF REPORT")),
        "filed_date": _yyyymmdd(first("FILED AS OF DATE")),
        "cik": int(cik) if cik and cik.isdigit() else None,
        "company": first("COMPANY CONFORMED NAME"),
        "fiscal_year_end": fye if fye and re.fullmatch(r"\d{4}", fye) else None,
        "items": ",".join(i for i in items if i),
        "repeated": _repeated_fields(fields, _ACCEPT.findall(head)),
    }


def _repeated_fields(fields: dict[str, list[str]], stamps: list[str]) -> str | None:
    """The fields a submission has once (:data:`UNIQUE_HEADER_FIELDS`, the acceptance stamp) that its
    header gives twice with different values, as "FIELD (a, b)" joined by "; "; None when there is none."""
    given = {**{k: [v for v in fields.get(k, []) if v] for k in UNIQUE_HEADER_FIELDS}, "<ACCEPTANCE-DATETIME>": stamps}
    twice = [f"{k} ({', '.join(dict.fromkeys(v))})" for k, v in given.items() if len(set(v)) > 1]
    return "; ".join(twice) or None


# ============================================================================ body text
class _TextExtractor(HTMLParser):
    """HTML -> plain text: block elements become line breaks, hidden/inline-XBRL headers dropped."""

    BLOCK = {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "section", "ul", "ol", "page", "hr", "center", "title"}
    SKIP = {"script", "style", "head", "ix:header", "xbrl"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag in self.BLOCK:
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    """Plain text of an HTML / SGML document, one paragraph per line."""
    if re.search(r"<(html|body|div|p|font|table)\b", markup[:20000], re.IGNORECASE):
        ex = _TextExtractor()
        ex.feed(markup)
        ex.close()
        text = "".join(ex.parts)
    else:  # plain-text filing with SGML page/table markers
        text = re.sub(r"</?(PAGE|S|C|TABLE|CAPTION|FN|F\d+)>", "\n", markup, flags=re.IGNORECASE)
        text = re.sub(r"<[^>\n]{1,200}>", " ", text)
    text = text.replace("\xa0", " ").replace("\u200b", "")
    lines = [re.sub(r"[ \t\r\f\v]+", " ", ln).strip() for ln in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


_DOC = re.compile(r"<DOCUMENT>(.*?)</DOCUMENT>", re.DOTALL | re.IGNORECASE)
_DOC_TYPE = re.compile(r"<TYPE>\s*([^\s<]+)", re.IGNORECASE)
_DOC_TEXT = re.compile(r"<TEXT>(.*?)(?:</TEXT>|$)", re.DOTALL | re.IGNORECASE)


def submission_text(text: str, form_type: str) -> str:
    """Main document (TYPE == form type) plus EX-99.1 for 8-Ks, as plain text ("" if absent).

    The EX-99.1 exhibit follows the main document after a line ``EX-99.1``.
    """
    end = text.find("</SEC-HEADER>")
    if end < 0:
        return ""
    form = (form_type or "").upper()
    want = {form: "", **({"EX-99.1": "EX-99.1"} if form.startswith("8-K") else {})}
    found: dict[str, str] = {}
    for doc in _DOC.findall(text[end:]):
        m = _DOC_TYPE.search(doc)
        dtype = m.group(1).upper() if m else ""
        if dtype in want and dtype not in found:
            t = _DOC_TEXT.search(doc)
            found[dtype] = html_to_text(t.group(1)) if t else ""
    parts = []
    for dtype, marker in want.items():
        if found.get(dtype):
            parts.append((marker + "\n" if marker else "") + found[dtype])
    return "\n\n".join(parts)


# ============================================================================ fiscal periods
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


# ============================================================================ passages
_HEADING = re.compile(
    r"^[ \t>#*_]*(?:part\s+(?P<part>iv|i{1,3})\b[ \t,.:;—–\-]*)?item\s+(?P<num>\d{1,2}(?:\.\d{1,2})?[a-d]?)\b\.?"
    r"(?P<rest>[^\n]*)$|^[ \t]*(?P<ex>EX-99\.1)[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_PART = re.compile(r"^[ \t>#*_]*part\s+(iv|i{1,3})\b(?![^\n]*\bitem\s+\d)", re.IGNORECASE | re.MULTILINE)
_TABLE_RULE = re.compile(r"^[\s|:\-]*$")
_PART_LINE = re.compile(r"(?i:part)\s+(?:IV|I{1,3})\b[\s.:—–\-]*(?:[A-Z][A-Z ,&]*)?")
_PIPES = re.compile(r"[ \t]*(?:\|[ \t]*)+")
_SENT_SPLIT = re.compile(r"(?<=[.!?;])\s+(?=[\"'“(\[]?[A-Z0-9])")


def _clean_block(text: str) -> str:
    """Drop markdown table rules and PART lines, collapse cell separators; one line per paragraph."""
    out = []
    for ln in text.split("\n"):
        if "|" in ln:
            if _TABLE_RULE.match(ln):
                continue
            ln = _PIPES.sub(" | ", ln).strip(" |")
        ln = re.sub(r"[ \t]+", " ", ln).strip()
        if ln and not _PART_LINE.fullmatch(ln):  # "PART II — OTHER INFORMATION": structure, not content
            out.append(ln)
    return "\n".join(out)


def _words(text: str) -> int:
    return len(text.split())


def _chunk(text: str, max_words: int) -> list[str]:
    """Consecutive chunks of at most ``max_words`` words, cut on sentence boundaries when possible."""
    units: list[str] = []
    for para in text.split("\n"):
        for sent in _SENT_SPLIT.split(para):
            w = sent.split()
            while len(w) > max_words:  # a run-on "sentence" (tables): cut on words
                units.append(" ".join(w[:max_words]))
                w = w[max_words:]
            if w:
                units.append(" ".join(w))
    chunks, cur, n = [], [], 0
    for u in units:
        k = _words(u)
        if cur and n + k > max_words:
            chunks.append(" ".join(cur))
            cur, n = [], 0
        cur.append(u)
        n += k
    if cur:
        chunks.append(" ".join(cur))
    return chunks


def _item_label(num: str) -> str:
    """ "1a" -> "Item 1A", "2.02" -> "Item 2.02"."""
    return "Item " + num.upper()


def split_filing_passages(text: str, form_type: str, max_words: int = 160) -> list[dict]:
    """Split filing text into item passages.

    Parameters
    ----------
    text : str
        Plain or markdown filing text.
    form_type : str
        "8-K", "10-Q", "10-K" (amendments too).
    max_words : int
        Longest passage, in words.

    Returns
    -------
    list of dict
        ``{"item", "text", "part"}`` in document order. ``item`` is "Item 2.02", "Item 1A", ...,
        "Cover" for text before the first heading, "Exhibit 99.1" for an 8-K press release;
        ``part`` is "I".."IV" when a PART heading precedes the item (10-Q items repeat across
        parts), else None. A heading that recurs later with the same part and item is a
        table-of-contents entry and does not start a section. Sections whose body has fewer than
        5 words ("None.") are dropped, long ones are chunked on sentence boundaries, and any
        passage under 5 words is dropped.
    """
    if not text or not text.strip():
        return []
    max_words = max(5, int(max_words))
    parts = [(m.start(), m.group(1).upper()) for m in _PART.finditer(text)]
    heads = []  # (match, item label, part)
    for m in _HEADING.finditer(text):
        if m.group("ex"):
            heads.append((m, "Exhibit 99.1", None))
            continue
        part = (m.group("part") or "").upper() or next((p for pos, p in reversed(parts) if pos < m.start()), None)
        heads.append((m, _item_label(m.group("num")), part))
    # a heading repeated later (same part and item) is a table-of-contents entry: not a boundary
    last = {(it, pt): i for i, (_, it, pt) in enumerate(heads)}
    heads = [h for i, h in enumerate(heads) if last[(h[1], h[2])] == i]
    bounds = [0] + [m.start() for m, _, _ in heads] + [len(text)]
    out: list[dict] = []
    for i in range(len(bounds) - 1):
        seg = text[bounds[i] : bounds[i + 1]]
        if i == 0:
            item, part, heading, body = "Cover", None, "", seg
        else:
            m, item, part = heads[i - 1]
            heading = seg[: seg.find("\n")] if "\n" in seg else seg
            body = seg[len(heading) :]
            if m.group("ex") or _words(heading) > 25:  # marker line, or heading run into its paragraph
                heading, body = "", (body if m.group("ex") else seg)
        body = _clean_block(body)
        if _words(body) < 5:
            continue
        section = (_clean_block(heading) + "\n" + body).strip() if heading else body
        for chunk in _chunk(section, max_words):
            if _words(chunk) >= 5:
                out.append({"item": item, "text": chunk, "part": part})
    return out


# ============================================================================ index / text sources
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


def _json_text(path: Path) -> str:
    """A submissions JSON's text: UTF-8, or the encoding its byte-order mark names (both unambiguous).

    Raises
    ------
    SourceError
        Bytes that are not UTF-8 (a Latin-1 or Windows-1252 export): never guessed.
    """
    data = path.read_bytes()
    enc = bom_encoding(data)
    try:
        return data.decode(enc or "utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"{path.name}: not {'UTF-8' if enc is None else enc.upper()} text (byte 0x{data[exc.start]:02x} at offset {exc.start:,}; "
            "Latin-1 or Windows-1252?): save it as UTF-8"
        ) from None


def _unique_keys(path: Path):
    """A ``json.loads`` hook that refuses a key given twice with different values (``json`` keeps the last)."""

    def hook(pairs: list[tuple[str, object]]) -> dict:
        out: dict = {}
        for k, v in pairs:
            if k in out and out[k] != v:
                raise SourceError(f"{path.name}: key {k!r} given twice with different values (which one is meant cannot be told): fix the file")
            out[k] = v
        return out

    return hook


def read_submissions_json(path: Path, file_index: int) -> list[FilingRecord]:
    """Records of a submissions JSON (``filings.recent``, or an overflow page's top-level arrays)."""
    try:
        doc = json.loads(_json_text(path), object_pairs_hook=_unique_keys(path))
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path.name}: not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise SourceError(f"{path.name}: not an SEC submissions JSON")
    block = doc.get("filings", {}).get("recent") if isinstance(doc.get("filings"), dict) else None
    if block is None and "accessionNumber" in doc:
        block = doc
    if not isinstance(block, dict) or "accessionNumber" not in block:
        raise SourceError(f"{path.name}: not an SEC submissions JSON (no filings.recent.accessionNumber)")
    cik_i, cik_conflict = _json_cik(doc, path.name)
    tickers = [str(t).strip().upper() for t in doc.get("tickers") or [] if t and str(t).strip()]
    fye = doc.get("fiscalYearEnd")
    n = len(block["accessionNumber"])
    lengths = {k: len(v) for k, v in block.items() if isinstance(v, list)}
    short = {k: m for k, m in lengths.items() if m != n}
    if short:
        # parallel arrays that do not line up cannot be zipped: a time would go to another filing
        why = f"{R_UNEQUAL_ARRAYS} (accessionNumber {n}, " + ", ".join(f"{k} {m}" for k, m in sorted(short.items())) + ")"
        return _json_problem_records(block, path, file_index, cik_i, why)
    missing = [k for k in NEEDED_ARRAYS if not isinstance(block.get(k), list)]
    if missing:  # not one filing of this file has a form, a time or a date: say that, not "form not used" on each
        return _json_problem_records(block, path, file_index, cik_i, f"{R_MISSING_ARRAYS}: {', '.join(missing)}")
    if cik_conflict:  # whose filings these are is in doubt: none of them is used
        return _json_problem_records(block, path, file_index, cik_i, cik_conflict)
    names = _former_names(doc)
    own_names = tuple(n for n in [doc.get("name"), *(f[2] for f in names)] if isinstance(n, str) and n.strip())

    def arr(key: str) -> list:
        v = block.get(key)
        return list(v) if isinstance(v, list) else [None] * n

    out = []
    for i, (acc, form, acc_t, filed, rep, items) in enumerate(
        zip(arr("accessionNumber"), arr("form"), arr("acceptanceDateTime"), arr("filingDate"), arr("reportDate"), arr("items"), strict=True)
    ):
        accepted, date_only = _acceptance_ns(acc_t)
        out.append(
            FilingRecord(
                accession=_norm_accession(acc),
                source="submissions_json",
                source_file=path.name,
                source_row=i,
                file_index=file_index,
                form_type=(form or "").strip() or None,
                cik=cik_i,
                company=_name_at(names, doc.get("name"), accepted),
                ticker=(tickers[0] if tickers else None),
                tickers=tuple(tickers),
                names=own_names,
                accepted_ns=accepted,
                date_only=date_only,
                filed_date=_date(filed),
                report_date=_date(rep),
                items=(items or "").strip(),
                fye=fye if isinstance(fye, str) and re.fullmatch(r"\d{4}", fye) else None,
            )
        )
    return out


def _json_cik(doc: dict, file_name: str) -> tuple[int | None, str | None]:
    """A submissions JSON's CIK (its ``cik`` field, else its file name's) and why, if the two disagree."""
    m = re.search(r"CIK0*(\d+)", file_name, re.IGNORECASE)
    from_name = int(m.group(1)) if m else None
    field = str(doc.get("cik") or "").strip()
    from_field = int(field) if field.isdigit() else None
    if from_name is not None and from_field is not None and from_name != from_field:
        why = (
            f"{R_CIK_VS_FILE}: cik {from_field} in the file, CIK {from_name} in its name {file_name} "
            "(none of its filings is used: re-download it or fix the name)"
        )
        return from_field, why
    return (from_field if from_field is not None else from_name), None


def _json_problem_records(block: dict, path: Path, file_index: int, cik: int | None, why: str) -> list[FilingRecord]:
    """One unusable record per accession of a submissions JSON, each quarantined with ``why``."""
    return [
        FilingRecord(
            accession=_norm_accession(acc),
            source="submissions_json",
            source_file=path.name,
            source_row=i,
            file_index=file_index,
            cik=cik,
            problem=why,
        )
        for i, acc in enumerate(block["accessionNumber"])
    ]


def _former_names(doc: dict) -> list[tuple[int, int, str]]:
    """(from ns, to ns, name) of a submissions JSON's ``formerNames`` (the end of ``to``'s day)."""
    out = []
    for f in doc.get("formerNames") or []:
        if not isinstance(f, dict) or not f.get("name"):
            continue
        lo, hi = _utc_ns(f.get("from")), _utc_ns(f.get("to"))
        if lo is None or hi is None:
            continue
        out.append((lo, hi + 86_400 * 10**9 - 1, str(f["name"]).strip()))
    return sorted(out)


def _name_at(former: list[tuple[int, int, str]], current: str | None, t_ns: int | None) -> str | None:
    """The company's name when it filed: a former name whose dates cover ``t_ns``, else today's."""
    if t_ns is not None:
        hits = [name for lo, hi, name in former if lo <= t_ns <= hi]
        if hits:
            return hits[-1]
    return current


def read_full_submission(path: Path, file_index: int, with_text: bool) -> list[FilingRecord]:
    """One record from a ``full-submission.txt`` (header always; body text when ``with_text``).

    A file naming two accessions (its folder's and its header's) is unusable; a truncated one
    quarantines its filing (``conflict``).
    """
    size = path.stat().st_size
    if size > MAX_SUBMISSION_BYTES:
        raise SourceError(f"{path}: {size:,} bytes, over the {MAX_SUBMISSION_BYTES:,}-byte limit for one submission (not read)")
    data = path.read_bytes()
    enc = bom_encoding(data)  # UTF-16 text has NUL bytes: read as its byte-order mark says, not as binary
    if enc is None and b"\x00" in data[:65536]:
        raise SourceError(f"{path}: a binary or corrupt file (NUL bytes), not an EDGAR SGML submission")
    raw = data.decode(enc or "utf-8", errors="replace")
    if "\n" not in raw[:5000] and "\r" in raw[:5000]:
        raw = raw.replace("\r", "\n")  # old Mac line ends (CR alone): the header is read line by line
    if "<SEC-HEADER>" not in raw[:5000] and "ACCESSION NUMBER:" not in raw[:5000]:
        raise SourceError(f"{path}: not an EDGAR SGML submission (no <SEC-HEADER>)")
    h = parse_submission_header(raw)
    # sec-edgar-downloader layout: <TICKER>/<FORM>/<ACCESSION>/full-submission.txt
    ticker = path.parent.parent.parent.name.upper() if len(path.parts) >= 4 else None
    acc = _norm_accession(h["accession"]) or _norm_accession(path.parent.name)
    two = _two_accessions(path, h, raw)
    label = f"{path.parent.name if two else (acc or path.parent.name)}/{path.name}"
    return [
        FilingRecord(
            accession=acc,
            source="sgml_header",
            source_file=label,
            source_row=0,
            file_index=file_index,
            form_type=h["form_type"],
            cik=h["cik"],
            company=h["company"],
            ticker=ticker,
            tickers=(ticker,) if ticker and _downloader_layout(path, h["form_type"]) else (),
            names=(h["company"],) if h["company"] else (),
            accepted_ns=int(h["acceptance_utc"].value) if h["acceptance_utc"] is not None else None,
            filed_date=h["filed_date"],
            report_date=h["period_of_report"],
            items=h["items"],
            fye=h["fiscal_year_end"],
            text=submission_text(raw, h["form_type"] or "") if with_text else "",
            problem=two,
            conflict=_truncation(raw, label) or (f"{R_HEADER_TWICE}: {h['repeated']} in {label} (re-download it)" if h["repeated"] else None),
        )
    ]


_SECDOC_TOKEN = re.compile(r"<SEC-DOCUMENT>[ \t]*(\S+)")
_DOC_OPEN = re.compile(r"<DOCUMENT>", re.IGNORECASE)
_DOC_CLOSE = re.compile(r"</DOCUMENT>", re.IGNORECASE)
_DOC_COUNT = re.compile(r"^[ \t]*PUBLIC DOCUMENT COUNT:[ \t]*(\d+)", re.MULTILINE)


def _two_accessions(path: Path, h: dict, raw: str) -> str | None:
    """Why a ``full-submission.txt`` is unusable when its folder, ``ACCESSION NUMBER`` and ``<SEC-DOCUMENT>`` disagree."""
    end = raw.find("</SEC-HEADER>")
    m = _SECDOC_TOKEN.search(raw[:end] if end >= 0 else _whole_lines(raw))
    named = {
        "folder": _norm_accession(path.parent.name),
        "ACCESSION NUMBER": _norm_accession(h["accession"]),
        "<SEC-DOCUMENT>": _norm_accession(m.group(1)) if m else None,
    }
    named = {k: v for k, v in named.items() if v}
    if len(set(named.values())) <= 1:
        return None
    said = ", ".join(f"{k} {v}" for k, v in named.items())
    return f"{R_TWO_ACCESSIONS}: {said} in {path.parent.name}/{path.name}; the file belongs to one filing: re-download it"


def _downloader_layout(path: Path, form_type: str | None) -> bool:
    """Whether ``path`` sits in ``<TICKER>/<FORM>/<ACCESSION>/``, FORM being the header's form (amendments in their base form's folder)."""
    if len(path.parts) < 4 or _norm_accession(path.parent.name) is None:
        return False
    form = (form_type or "").strip().upper()
    return path.parent.parent.name.upper() in {form, form.removesuffix("/A")}


def _truncation(raw: str, label: str) -> str | None:
    """Why a ``full-submission.txt`` with a body is cut short, or None: every ``<DOCUMENT>`` closed, as
    many as its header's PUBLIC DOCUMENT COUNT, then ``</SEC-DOCUMENT>``. A file without a
    ``<DOCUMENT>`` is a header when it does not open with ``<SEC-DOCUMENT>`` (EDGAR's ``.hdr.sgml``)
    or stops inside its header (the real sample's first 1,000 bytes): not checked."""
    end = raw.find("</SEC-HEADER>")
    body = raw[end:] if end >= 0 else raw
    opened = len(_DOC_OPEN.findall(body))
    if opened == 0 and (end < 0 or not raw[:200].lstrip().startswith("<SEC-DOCUMENT>")):
        return None
    closed = min(opened, len(_DOC_CLOSE.findall(body)))
    m = _DOC_COUNT.search(raw[:end] if end >= 0 else raw)
    declared = int(m.group(1)) if m else None
    why = []
    if declared is not None and closed < declared:
        why.append(f"{closed} of {declared} declared documents")
    if opened > closed:
        why.append(f"<DOCUMENT> {closed + 1} not closed")
    if body.rfind("</SEC-DOCUMENT>") < max(body.rfind("</DOCUMENT>"), 0):
        why.append("no </SEC-DOCUMENT> after its last document")
    if not why:
        return None
    return f"{R_TRUNCATED}: " + ", ".join(why) + f" in {label} (re-download it)"


def _own(value: object) -> tuple[str, ...]:
    """A parquet cell as a source's own ticker or name: () when empty."""
    return (str(value).strip(),) if isinstance(value, str) and value.strip() else ()


def _pcol(df: pl.DataFrame, name: str) -> list:
    return df[name].to_list() if name in df.columns else [None] * df.height


def read_filings_parquet(path: Path, file_index: int) -> list[FilingRecord]:
    """Records of ``filings_index.parquet`` (one per row) or ``filings_text.parquet`` (one per accession)."""
    df = pl.read_parquet(path)
    cols = set(df.columns)
    if not {"accession", "form_type"} <= cols:
        raise SourceError(f"{path.name}: unknown filings parquet (needs accession, form_type; has {df.columns})")
    if "section_idx" in cols and "text" in cols:
        return _text_parquet_records(df, path, file_index)
    acc_col = next((c for c in ("acceptance_datetime_utc", "acceptance_utc", "public_time") if c in cols), None)
    out = []
    for i, (acc, form, cik, comp, tick, at, filed, rep, items, src) in enumerate(
        zip(
            _pcol(df, "accession"),
            _pcol(df, "form_type"),
            _pcol(df, "cik"),
            _pcol(df, "company"),
            _pcol(df, "ticker"),
            _pcol(df, acc_col) if acc_col else [None] * df.height,
            _pcol(df, "filed_date"),
            _pcol(df, "report_date"),
            _pcol(df, "items"),
            _pcol(df, "acceptance_source"),
        )
    ):
        out.append(
            FilingRecord(
                accession=_norm_accession(acc),
                source=_source_label(src, "filings_index"),
                source_file=path.name,
                source_row=i,
                file_index=file_index,
                form_type=form,
                cik=int(cik) if cik is not None else None,
                company=comp,
                ticker=tick,
                tickers=_own(tick),
                names=_own(comp),
                **_acceptance_kw(at),
                filed_date=_date(filed),
                report_date=_date(rep),
                items=(items or "").strip(),
                fye=None,
            )
        )
    return out


def _text_parquet_records(df: pl.DataFrame, path: Path, file_index: int) -> list[FilingRecord]:
    df = df.with_row_index("_row").sort("accession", "section_idx")
    out = []
    for (acc,), g in df.group_by(["accession"], maintain_order=True):
        parts = []
        for sec, body in zip(_pcol(g, "section"), _pcol(g, "text")):
            body = (body or "").strip()
            sec = (sec or "").strip()
            if sec and not sec.lower().startswith("cover") and not body.lower().startswith(sec.lower()):
                body = f"{sec}\n{body}"
            if body:
                parts.append(body)
        r = g.row(0, named=True)
        at = r.get("acceptance_datetime_utc")
        out.append(
            FilingRecord(
                accession=_norm_accession(acc),
                source=_source_label(r.get("acceptance_source"), "filings_text"),
                source_file=path.name,
                source_row=int(g["_row"].min()),
                file_index=file_index,
                form_type=r.get("form_type"),
                cik=r.get("cik"),
                company=r.get("company"),
                ticker=r.get("ticker"),
                tickers=_own(r.get("ticker")),
                names=_own(r.get("company")),
                **_acceptance_kw(at),
                filed_date=_date(r.get("filed_date")),
                report_date=_date(r.get("report_date")),
                text="\n\n".join(parts),
            )
        )
    return out


def _read_records(index_paths, text_paths) -> list[FilingRecord]:
    pats = ("full-submission.txt",)
    idx_files = expand_paths(index_paths, pats) if index_paths else []
    txt_files = set(expand_paths(text_paths, pats)) if text_paths else set()
    files = sorted(set(idx_files) | txt_files, key=str)
    records: list[FilingRecord] = []
    for i, f in enumerate(files):
        name = f.name.lower()
        if name.endswith(".json"):
            records += read_submissions_json(f, i)
        elif name.endswith(".parquet"):
            records += read_filings_parquet(f, i)
        elif name.endswith(".txt"):
            try:
                records += read_full_submission(f, i, with_text=f in txt_files)
            except (SourceError, OSError) as exc:  # one bad filing is quarantined; the others load
                acc = _norm_accession(f.parent.name)
                records.append(
                    FilingRecord(
                        accession=acc,
                        source="sgml_header",
                        source_file=f"{f.parent.name}/{f.name}",
                        source_row=0,
                        file_index=i,
                        problem=f"{R_CORRUPT}: {str(exc).split(': ', 1)[-1]}",
                    )
                )
        else:
            raise SourceError(f"{f.name}: unknown filings file format (expected .json, .parquet or full-submission .txt)")
    return records


# ============================================================================ merge + loader
def _first(values):
    return next((v for v in values if v not in (None, "")), None)


def _cik_tickers(universe: pl.DataFrame) -> tuple[dict[int, list[str]], set[str]]:
    """Universe tickers by CIK (sorted), and the set of all universe tickers.

    Raises
    ------
    SourceError
        Two universe tickers share a CIK but name different companies (share classes may share one).
    """
    by_cik: dict[int, list[str]] = {}
    for t, c in zip(universe["ticker"].to_list(), universe["cik"].to_list()):
        if c is not None:
            by_cik.setdefault(int(c), []).append(t)
    by_cik = {k: sorted(v) for k, v in by_cik.items()}
    _check_shared_ciks(by_cik, _ticker_names(universe), universe)
    return by_cik, set(universe["ticker"].to_list())


def _ticker_names(universe: pl.DataFrame) -> dict[str, set[str]]:
    """Each universe ticker's company names (its ``aliases``, the ticker itself left out); {} without them."""
    if "aliases" not in universe.columns:
        return {}
    out = {}
    for t, a in zip(universe["ticker"].to_list(), universe["aliases"].to_list()):
        out[t] = set((a or "").split("|")) - {"", str(t).lower()}
    return out


def _check_shared_ciks(by_cik: dict[int, list[str]], names: dict[str, set[str]], universe: pl.DataFrame) -> None:
    """Raise when a CIK is given to two universe tickers whose names share nothing (a wrong cik cell)."""
    company = dict(zip(universe["ticker"].to_list(), universe["company"].to_list())) if "company" in universe.columns else {}
    for cik, ts in by_cik.items():
        first = names.get(ts[0], set())
        for t in ts[1:]:
            other = names.get(t, set())
            if first and other and not first & other:
                raise SourceError(
                    f"universe: CIK {cik} is given to {ts[0]} ({company.get(ts[0])}) and {t} ({company.get(t)}), which name different "
                    "companies, so their filings would go to either. Fix the cik column of the universe file (sources.universe); "
                    "share classes of one company (GOOG, GOOGL) may share a CIK when their names agree."
                )


def _tkey(ticker: str) -> str:
    """A ticker compared without case or punctuation (BRK.B = BRK-B)."""
    return re.sub(r"[^A-Z0-9]", "", str(ticker).upper())


def _ticker_vs_sources(cik, ticker: str, g: list[FilingRecord], by_cik, names: dict[str, set[str]]) -> str | None:
    """Why the universe's ticker for the filing's CIK contradicts a source's own tickers, or None: a
    source must name one of the CIK's universe tickers, or (a renamed ticker) the ticker's company."""
    cands = by_cik.get(cik, []) if cik is not None else []
    if not cands:
        return None  # the ticker came from a source itself
    keys = {_tkey(t) for t in cands}
    for r in g:
        if not r.tickers or keys & {_tkey(t) for t in r.tickers}:
            continue
        own = {a for n in r.names for a in company_aliases(n).split("|") if a}
        if own & names.get(ticker, set()):
            continue
        said = ", ".join(r.tickers) + (f" ({r.names[0]})" if r.names else "")
        return (
            f"{R_TICKER_VS_SOURCE}: the universe gives CIK {cik} to {', '.join(cands)}, {r.source_file} names itself {said}; "
            "fix the universe's cik column or the source"
        )
    return None


def _record_conflict(g: list[FilingRecord]) -> str | None:
    """The first contradiction a record of the filing has with itself (a truncated submission)."""
    return _first(r.conflict for r in g)


def _shared_cik_flags(accepted: pl.DataFrame, merged: list[dict]) -> pl.DataFrame:
    """A ``shared_cik`` flag per accepted filing of a CIK that several universe tickers share: it went to one."""
    day = dict(zip(accepted["accession"].to_list(), accepted["date"].to_list()))
    rows = []
    for m in merged:
        shared = m["_shared"]
        if len(shared) < 2:
            continue
        others = ", ".join(t for t in shared if t != m["ticker"])
        detail = (
            f"CIK {m['cik']} is shared by universe tickers {', '.join(shared)}: filing {m['accession']} goes to {m['ticker']} only "
            f"(the source's own ticker when it names one of them, else the first in sort order); {others} gets no copy"
        )
        f, r = m["_head"]
        rows.append({"source_file": f, "source_row": r, "ticker": m["ticker"], "date": day[m["accession"]], "flag": F_SHARED_CIK, "detail": detail})
    return pl.DataFrame(rows, schema=FLAG_COLUMNS).sort("source_file", "source_row") if rows else empty_flags()


def _pick_ticker(cik: int | None, src_tickers: list[str], by_cik, universe_set) -> str | None:
    """Ticker of a CIK in the universe (a source's ticker breaks ties, e.g. GOOG/GOOGL)."""
    cands = by_cik.get(cik, []) if cik is not None else []
    src = sorted({(t or "").upper() for t in src_tickers if t})
    if cands:
        hit = [t for t in src if t in cands]
        return hit[0] if hit else cands[0]
    hit = [t for t in src if t in universe_set]
    return hit[0] if hit else None


def _empty_filings() -> pl.DataFrame:
    return pl.from_arrow(FILINGS_RAW.schema.empty_table()).with_columns(pl.lit(None, dtype=pl.Date).alias("date"))


def load_filings(index_paths, text_paths, universe: pl.DataFrame) -> LoadResult:
    """Read EDGAR index and text sources into ``filings_raw`` rows plus quarantine.

    Parameters
    ----------
    index_paths, text_paths : list of str/Path (or one)
        Files, globs or directories (walked for ``full-submission.txt``). Full submissions in
        ``text_paths`` also give their header; those only in ``index_paths`` give the header only.
    universe : pl.DataFrame
        UNIVERSE frame (ticker, cik): maps CIK to ticker.

    Returns
    -------
    LoadResult
        ``accepted``: FILINGS_RAW columns plus ``date`` (decision day of public_time), sorted by
        (public_time, accession). Quarantine reasons, first failing check: per source record,
        unusable (unreadable file, JSON arrays of unequal length, JSON cik vs file name, two
        accessions in one file), missing accession, or a second entry of an accession in one
        submissions JSON (the later acceptance time is kept); per filing, form not used, ticker not
        in universe, no acceptance time, public time outside the calendar, truncated submission or
        a header giving one of its fields twice, universe ticker vs the source's own, acceptance vs
        filing date. ``flags``: ``shared_cik`` per filing of a CIK that several universe tickers
        share; ``date_only_acceptance`` per filing whose public time is a date-only acceptance
        time's (the end of that New York day).

    Raises
    ------
    SourceError
        Two universe tickers share a CIK but name different companies; an unreadable JSON (not
        JSON, not UTF-8 and no byte-order mark, a key given twice with different values).
    """
    by_cik, universe_set = _cik_tickers(universe)
    records = _read_records(index_paths, text_paths)
    cal = nyse()
    records, dup_rows = _json_duplicates(records)
    q_rows, groups = _group_records(records)
    q_rows += dup_rows
    rows_in = len(q_rows) + len(groups)
    merged = _merge_groups(groups, by_cik, universe_set, cal, q_rows, _ticker_names(universe))
    _add_fiscal_periods(merged, records)
    quarantine = _quarantine_frame(q_rows)
    out = _accepted_frame(merged, cal) if merged else _empty_filings()
    flags = pl.concat([_shared_cik_flags(out, merged), _date_only_flags(out, merged)]).sort("source_file", "source_row", "flag")
    return LoadResult("filings_raw", out, quarantine, rows_in, flags).check()


def _shown_time(r: FilingRecord) -> str:
    """A record's acceptance time as a reason shows it: a date only as written, else UTC ISO."""
    if r.accepted_ns is None:
        return "no acceptance time"
    return r.date_only or pd.Timestamp(r.accepted_ns, tz="UTC").isoformat()


def _json_duplicates(records: list[FilingRecord]) -> tuple[list[FilingRecord], list[dict]]:
    """The records without the second entries of an accession in one submissions JSON, and a
    quarantine row for each entry left out. Of the entries, the one with the latest acceptance time is
    kept (a time before none; equal times: the first row): it never lets a decision see the filing early.
    (An index parquet may give one filing per acceptance source and ticker: only JSONs are checked.)"""
    by_key: dict[tuple[int, str], list[FilingRecord]] = {}
    for r in records:
        if r.source == "submissions_json" and r.problem is None and r.accession is not None:
            by_key.setdefault((r.file_index, r.accession), []).append(r)
    left_out: set[int] = set()
    q_rows: list[dict] = []
    for (_, acc), rs in by_key.items():
        if len(rs) < 2:
            continue
        keep = max(rs, key=lambda r: (r.accepted_ns is not None, r.accepted_ns or 0, -r.source_row))
        for r in rs:
            if r is keep:
                continue
            left_out.add(id(r))
            if r.accepted_ns == keep.accepted_ns:
                why = f"the same acceptance time {_shown_time(keep)}: row {keep.source_row} is kept"
            else:
                why = (
                    f"acceptance times {_shown_time(keep)} (row {keep.source_row}) and {_shown_time(r)} (row {r.source_row}): "
                    f"row {keep.source_row}, the later, is kept, so no decision sees the filing early"
                )
            q_rows.append(
                {
                    "source_file": r.source_file,
                    "source_row": r.source_row,
                    "reason": f"{R_DUPLICATE}: {acc} at rows {keep.source_row} and {r.source_row} of {r.source_file}, {why}",
                    "raw": {"accession": acc, "form_type": r.form_type, "acceptance_time": _shown_time(r), "source": r.source},
                }
            )
    return [r for r in records if id(r) not in left_out], q_rows


def _date_only_flags(accepted: pl.DataFrame, merged: list[dict]) -> pl.DataFrame:
    """A ``date_only_acceptance`` flag per accepted filing whose public time is a date-only acceptance
    time's (the end of that New York day), naming the session it is decided on."""
    day = dict(zip(accepted["accession"].to_list(), accepted["date"].to_list()))
    rows = []
    for m in merged:
        for f, r, value in m["_date_only"]:
            detail = (
                f"acceptance time {value!r} of {m['accession']} in {f} is a date without a time of day: read as public at the end "
                f"of that day (23:59:59 New York), so decided on the next session, {day[m['accession']]}; a source with the "
                "time of day (the full-submission.txt header's <ACCEPTANCE-DATETIME>) would decide it on its own session"
            )
            rows.append(
                {"source_file": f, "source_row": r, "ticker": m["ticker"], "date": day[m["accession"]], "flag": F_DATE_ONLY, "detail": detail}
            )
    return pl.DataFrame(rows, schema=FLAG_COLUMNS) if rows else empty_flags()


def _group_records(records: list[FilingRecord]) -> tuple[list[dict], dict[str, list[FilingRecord]]]:
    """Quarantine rows of records with a problem or no accession, and the other records by accession."""
    q_rows: list[dict] = []
    groups: dict[str, list[FilingRecord]] = {}
    for r in records:
        if r.problem is not None:
            q_rows.append(
                {
                    "source_file": r.source_file,
                    "source_row": r.source_row,
                    "reason": r.problem,
                    "raw": {"accession": r.accession, "cik": r.cik, "source": r.source},
                }
            )
        elif r.accession is None:
            q_rows.append(
                {
                    "source_file": r.source_file,
                    "source_row": r.source_row,
                    "reason": R_NO_ACCESSION,
                    "raw": {"form_type": r.form_type, "cik": r.cik, "source": r.source},
                }
            )
        else:
            groups.setdefault(r.accession, []).append(r)
    return q_rows, groups


def _merge_groups(groups: dict[str, list[FilingRecord]], by_cik, universe_set, cal, q_rows: list[dict], names=None) -> list[dict]:
    """One filing per accession (in accession order) from its records; a filing that fails a check
    is appended to ``q_rows`` instead. ``names``: each universe ticker's company names."""
    merged: list[dict] = []
    for acc in sorted(groups):
        g = sorted(groups[acc], key=lambda r: (r.file_index, r.source_row))
        form = (_first(r.form_type for r in g) or "").strip().upper()
        cik = _first(r.cik for r in g)
        times = [(r.accepted_ns, r.source) for r in g if r.accepted_ns is not None]
        public = max(t for t, _ in times) if times else None
        ticker = _pick_ticker(cik, [r.ticker for r in g], by_cik, universe_set)
        reason = (
            _merge_reason(form, ticker, public, cal)
            or _record_conflict(g)
            or _ticker_vs_sources(cik, ticker, g, by_cik, names or {})
            or _acceptance_vs_filed(g)
        )
        if reason:
            q_rows.append(_merge_quarantine_row(acc, g, form, cik, public, reason))
            continue
        m = _merged_filing(acc, g, form, cik=cik, ticker=ticker, times=times, public=public)
        m["_head"], m["_shared"] = (g[0].source_file, g[0].source_row), (by_cik.get(cik, []) if cik is not None else [])
        m["_date_only"] = [(r.source_file, r.source_row, r.date_only) for r in g if r.date_only and r.accepted_ns == public]
        merged.append(m)
    return merged


def _acceptance_vs_filed(g: list[FilingRecord]) -> str | None:
    """The cross-check of each record's acceptance time against its own filing date: the acceptance's
    New York date must lie in [filing date - ACCEPTANCE_BEFORE_FILED_MAX_DAYS, filing date]."""
    for r in g:
        if r.accepted_ns is None or r.filed_date is None:
            continue
        ny = pd.Timestamp(r.accepted_ns, tz="UTC").tz_convert("America/New_York").date()
        lag = (r.filed_date - ny).days
        if not 0 <= lag <= ACCEPTANCE_BEFORE_FILED_MAX_DAYS:
            where = "after" if lag < 0 else "before"
            return (
                f"{R_ACCEPTANCE_VS_FILED}: accepted {ny} (New York), {abs(lag)} days {where} its filing date "
                f"{r.filed_date} in {r.source_file} (allowed: the filing date or up to {ACCEPTANCE_BEFORE_FILED_MAX_DAYS} days before)"
            )
    return None


def _merge_reason(form: str, ticker: str | None, public: int | None, cal) -> str | None:
    """The first failing check of a merged filing: form not used, ticker not in universe, no
    acceptance time, public time outside the calendar; None when it passes."""
    if form not in FORMS_USED:
        return R_FORM
    if ticker is None:
        return R_NO_TICKER
    if public is None:
        return R_NO_TIME
    if not (cal.opens_ns[0] <= public <= cal.closes_ns[-1]):
        return R_OUT_OF_CALENDAR
    return None


def _merge_quarantine_row(acc: str, g: list[FilingRecord], form: str, cik, public: int | None, reason: str) -> dict:
    """The quarantine row of a merged filing: at its first record, with what the sources agreed on."""
    head = g[0]
    raw = {"accession": acc, "form_type": form, "cik": cik, "sources": sorted({f"{r.source}:{r.source_file}" for r in g})}
    if public is not None:
        raw["public_time"] = pd.Timestamp(public, tz="UTC").isoformat()
    return {"source_file": head.source_file, "source_row": head.source_row, "reason": reason, "raw": raw}


def _merged_filing(acc: str, g: list[FilingRecord], form: str, cik, ticker: str, times: list[tuple[int, str]], public: int) -> dict:
    """The accepted filing of an accession: the longest text, each field from the first record that has it."""
    text = max((r.text for r in g), key=len)
    cik = int(cik) if cik is not None else int(acc[:10])
    return {
        "accession": acc,
        "cik": cik,
        "ticker": ticker,
        # the name at filing time: the SGML header's conformed name, else the JSON's as of then
        "company": _first(r.company for r in sorted(g, key=lambda r: r.source != "sgml_header")) or ticker,
        "form_type": form,
        "public_ns": public,
        "acceptance_source": "|".join(sorted({s for _, s in times})),
        "filed_date": _first(r.filed_date for r in g),
        "report_date": _first(r.report_date for r in g) or report_date_in_text(text),
        "items": _first(r.items for r in g) or "",
        "text": text,
        "source_file": "|".join(sorted({r.source_file for r in g})),
        "_fye_header": _first(r.fye for r in g if r.source == "sgml_header"),
    }


def _add_fiscal_periods(merged: list[dict], records: list[FilingRecord]) -> None:
    """Each merged filing's ``fiscal_period``, from its fiscal year end: the SGML header's, else the
    latest prior 10-K's, else the submissions JSON's (``_fye_header`` is dropped)."""
    json_fye = {}
    for r in records:
        if r.source == "submissions_json" and r.fye and r.cik is not None:
            json_fye.setdefault(int(r.cik), r.fye)
    history = _annual_report_history(merged)
    for m in merged:
        fye = m.pop("_fye_header") or _fye_from_history(history.get(m["cik"], []), m["public_ns"], json_fye.get(m["cik"]))
        m["fiscal_period"] = fiscal_period(m["form_type"], m["report_date"], fye, m["text"])


_COVER_PERIOD = re.compile(
    rf"for\s+the\s+(?:quarterly\s+period|fiscal\s+year|fiscal\s+quarter|year)\s+ended\s+{_MONTHS}\s+(\d{{1,2}}),?\s+(\d{{4}})",
    re.IGNORECASE,
)


def report_date_in_text(text: str, limit: int = 10000) -> dt.date | None:
    """Period end stated on a 10-K/10-Q cover ("For the quarterly period ended June 29, 2024")."""
    m = _COVER_PERIOD.search(text[:limit]) if text else None
    if not m:
        return None
    try:
        return dt.datetime.strptime(f"{m.group(1)} {m.group(2)} {m.group(3)}", "%B %d %Y").date()
    except ValueError:
        return None


def _annual_report_history(merged: list[dict]) -> dict[int, list[tuple[int, str]]]:
    """Per CIK, (public_ns, "MMDD" of the report date) of each 10-K, in time order."""
    out: dict[int, list[tuple[int, str]]] = {}
    for m in merged:
        if m["form_type"].startswith("10-K") and m["report_date"] is not None:
            out.setdefault(m["cik"], []).append((m["public_ns"], m["report_date"].strftime("%m%d")))
    return {k: sorted(v) for k, v in out.items()}


def _fye_from_history(history: list[tuple[int, str]], public_ns: int, json_fye: str | None) -> str:
    """Fiscal year end for a filing without a header one.

    The latest 10-K accepted at or before the filing (point in time), else the submissions
    JSON's company-level ``fiscalYearEnd``, else "1231". A later 10-K is never consulted: what a
    filing says about itself must not change when a future filing arrives (time-travel test).
    """
    prior = [f for t, f in history if t <= public_ns]
    if prior:
        return prior[-1]
    if json_fye:
        return json_fye
    return DEFAULT_FYE


def _quarantine_frame(rows: list[dict]) -> pl.DataFrame:
    if not rows:
        return empty_quarantine()
    parts = []
    for reason in sorted({r["reason"] for r in rows}):
        sel = [r for r in rows if r["reason"] == reason]
        df = pl.DataFrame(
            {
                "source_file": [r["source_file"] for r in sel],
                "source_row": pl.Series([r["source_row"] for r in sel], dtype=pl.Int64),
                "raw_json": [json.dumps(r["raw"], default=str, sort_keys=True) for r in sel],
            }
        )
        q = quarantine_rows(df.select("source_file", "source_row"), reason)
        parts.append(q.with_columns(df["raw_json"].alias("raw")))
    return pl.concat(parts).sort("source_file", "source_row", "reason", "raw")


def _accepted_frame(rows: list[dict], cal) -> pl.DataFrame:
    public = np.array([r["public_ns"] for r in rows], dtype=np.int64)
    days = cal.decision_days(public).astype("datetime64[D]")
    df = pl.DataFrame(
        {
            **{k: [r[k] for r in rows] for k in ("accession", "cik", "ticker", "company", "form_type")},
            "public_time": pl.Series(public).cast(pl.Datetime("ns", "UTC")).dt.cast_time_unit("us"),
            **{k: [r[k] for r in rows] for k in ("acceptance_source", "filed_date", "report_date", "fiscal_period", "items", "text", "source_file")},
            "date": pl.Series(days).cast(pl.Date),
        },
        schema_overrides={"filed_date": pl.Date, "report_date": pl.Date, "fiscal_period": pl.Utf8, "cik": pl.Int64},
    )
    schema = _empty_filings().schema
    return df.select([pl.col(c).cast(t) for c, t in schema.items()]).sort("public_time", "accession")


__all__ = [
    "load_filings",
    "split_filing_passages",
    "parse_submission_header",
    "submission_text",
    "html_to_text",
    "fiscal_period",
    "fiscal_year_quarter",
    "period_in_text",
    "read_submissions_json",
    "read_full_submission",
    "read_filings_parquet",
    "FORMS_USED",
]
