"""Ad-hoc financial queries (seed 001): parse into structured filters.

"NVDA gross margin Q3 2024" → tickers [NVDA], metrics [gross margin], period Q3 2024.
"Compare operating margins across AAPL, MSFT, GOOGL, AMZN and META" → five tickers, comparison.
"Which company has the highest operating margin?" → quantitative comparison, no ticker.
"What did Intel say about guidance?" → ticker INTC (by company name), metric guidance.
"risks in Apple's latest 10-K" → ticker AAPL, form 10-K, latest, risk query.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from .names import NameIndex

METRICS: dict[str, tuple[str, ...]] = {
    "gross margin": ("gross margin", "gross margins"),
    "operating margin": ("operating margin", "operating margins"),
    "net margin": ("net margin", "net margins", "profit margin", "profit margins"),
    "margin": ("margin", "margins"),
    "revenue": ("revenue", "revenues", "sales", "top line", "top-line"),
    "eps": ("eps", "earnings per share", "diluted eps"),
    "net income": ("net income", "profit", "earnings"),
    "operating income": ("operating income",),
    "free cash flow": ("free cash flow", "fcf", "cash flow"),
    "guidance": ("guidance", "outlook", "forecast"),
    "r&d": ("r&d", "research and development"),
    "capex": ("capex", "capital expenditures"),
    "dividend": ("dividend", "dividends"),
    "buyback": ("buyback", "repurchase", "repurchases"),
    "debt": ("debt", "notes", "borrowings"),
}
PLURAL = "s?"  # a metric's name also counts in the plural
QUANT_METRICS = {
    "gross margin",
    "operating margin",
    "net margin",
    "margin",
    "revenue",
    "eps",
    "net income",
    "operating income",
    "free cash flow",
    "r&d",
    "capex",
}
FORMS = {
    "10-k": "10-K",
    "10k": "10-K",
    "annual report": "10-K",
    "10-q": "10-Q",
    "10q": "10-Q",
    "quarterly report": "10-Q",
    "8-k": "8-K",
    "8k": "8-K",
    "press release": "8-K",
}
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"]
_ORD = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_COMPARE = re.compile(
    r"\b(compare|comparison|versus|vs\.?|across|which (company|companies|of)|highest|lowest|best|worst|rank|top \d+ competitors?)\b", re.I
)
_QUANT = re.compile(r"\b(how much|how many|highest|lowest|growth|grew|increase|decrease|margin|ratio|percent|%)\b", re.I)
_RISK = re.compile(r"\b(risk|risks|risk factors|uncertaint(y|ies)|threat|exposure)\b", re.I)
# Filing sections a query can ask for by name, and the items that hold them on each form (a 10-Q's
# Part I Item 2 is its MD&A, its Part II items are labelled "Part II Item N" by core/evidence.py).
SECTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    "risk factors": {"10-K": ("Item 1A",), "10-Q": ("Part II Item 1A", "Item 1A")},
    "md&a": {"10-K": ("Item 7",), "10-Q": ("Item 2",)},
    "market risk": {"10-K": ("Item 7A",), "10-Q": ("Item 3",)},
    "legal proceedings": {"10-K": ("Item 3",), "10-Q": ("Part II Item 1",)},
    "cybersecurity": {"10-K": ("Item 1C",)},
}
_SECTION_PATS = {
    "risk factors": re.compile(r"\brisk[ -]factors?\b", re.I),
    "md&a": re.compile(r"\bmd&a\b|\bmanagement'?s? discussion\b", re.I),
    "market risk": re.compile(r"\bmarket risks?\b", re.I),
    "legal proceedings": re.compile(r"\blegal proceedings?\b|\blitigation\b|\blawsuits?\b", re.I),
    "cybersecurity": re.compile(r"\bcyber ?security\b", re.I),
}
_YEAR = re.compile(r"\b((?:19|20)\d{2})\b")
_EARNINGS = re.compile(
    r"\b(results?|earnings|eps|quarter(ly)?|forecasts?|outlooks?|guidance|revenue|sales|net income|loss per share|profits?)\b", re.I
)
_SAY = re.compile(r"\b(say|said|says|comment|commentary|mention|mentioned|talk about|discuss)\b", re.I)


@dataclass
class ParsedQuery:
    text: str
    tickers: list[str] = field(default_factory=list)  # every share class of each named company
    companies: list[str] = field(default_factory=list)  # one key per named company (CIK or name)
    company_tickers: list[list[str]] = field(default_factory=list)  # the tickers of each named company
    metrics: list[str] = field(default_factory=list)
    periods: list[str] = field(default_factory=list)  # "Q3 2024", "FY2023"
    quarters_without_year: list[int] = field(default_factory=list)  # "third quarter": the latest one (per company)
    period_windows: list[tuple[list[str], dt.date, dt.date]] = field(default_factory=list)  # (tickers, from, to): news of a period
    release_days: list[tuple[list[str], dt.date, str]] = field(default_factory=list)  # (tickers, day, source): a results release asked about
    notes: list[str] = field(default_factory=list)  # how the periods were read, per company
    form_types: list[str] = field(default_factory=list)
    date_from: dt.date | None = None
    date_to: dt.date | None = None
    latest: bool = False
    sections: list[str] = field(default_factory=list)  # filing sections asked for by name (SECTIONS)
    named_until: dt.date | None = None  # the end of the latest time the query names (a year, a month, a range)
    is_comparison: bool = False
    is_quantitative: bool = False
    is_earnings: bool = False  # asks about results, earnings, guidance or a reported figure
    query_type: str = "general"  # quantitative | comparison | risk | statement | general

    @property
    def names_ticker_or_metric(self) -> bool:
        return bool(self.tickers or self.metrics)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["date_from"] = self.date_from.isoformat() if self.date_from else None
        d["date_to"] = self.date_to.isoformat() if self.date_to else None
        return d


def _quarter_before(day: dt.date) -> tuple[int, int]:
    q = (day.month - 1) // 3 + 1
    return (q - 1, day.year) if q > 1 else (4, day.year - 1)


def parse_periods(text: str, as_of: dt.date) -> tuple[list[str], dt.date | None, dt.date | None]:
    """Fiscal periods and date ranges mentioned in a query."""
    t = text.lower()
    periods: list[str] = []
    for m in re.finditer(r"\bq([1-4])\s*(?:fy)?\s*'?(\d{4}|\d{2})\b", t):
        y = int(m.group(2))
        periods.append(f"Q{m.group(1)} {y + 2000 if y < 100 else y}")
    t = re.sub(r"\bq([1-4])\s*(?:fy)?\s*'?(\d{4}|\d{2})\b", " ", t)  # "Q3 FY2023" is a quarter, not also the year
    t = re.sub(r"\b(first|second|third|fourth|1st|2nd|3rd|4th)-quarter\b", r"\1 quarter", t)  # "fourth-quarter 2020"
    t = re.sub(r"\bfiscal (first|second|third|fourth|1st|2nd|3rd|4th) quarter (\d{4})\b", r"\1 quarter fiscal \2", t)
    for m in re.finditer(r"\b(first|second|third|fourth|1st|2nd|3rd|4th) quarter(?: of)?(?: fiscal(?: year)?)? (\d{4})\b", t):
        periods.append(f"Q{_ORD[m.group(1)]} {m.group(2)}")
    t = re.sub(r"\b(first|second|third|fourth|1st|2nd|3rd|4th) quarter(?: of)?(?: fiscal(?: year)?)? \d{4}\b", " ", t)
    for m in re.finditer(r"\b(?:fy\s?'?(\d{4}|\d{2})|fiscal(?: year)? (\d{4}))\b", t):
        y = int(m.group(1) or m.group(2))
        periods.append(f"FY{y + 2000 if y < 100 else y}")
    if re.search(r"\blast quarter\b|\bprevious quarter\b|\bmost recent quarter\b", t):
        q, y = _quarter_before(as_of)
        periods.append(f"Q{q} {y}")
    if re.search(r"\blast (fiscal )?year\b", t):
        periods.append(f"FY{as_of.year - 1}")
    date_from = date_to = None
    m = re.search(r"\bbetween (\d{4}-\d{2}-\d{2}) and (\d{4}-\d{2}-\d{2})\b", t)
    if m:
        date_from, date_to = dt.date.fromisoformat(m.group(1)), dt.date.fromisoformat(m.group(2))
    m = re.search(r"\bsince (\d{4}-\d{2}-\d{2})\b", t)
    if m:
        date_from = dt.date.fromisoformat(m.group(1))
    m = re.search(r"\b(?:in|during) (january|february|march|april|may|june|july|august|september|october|november|december),? (\d{4})\b", t)
    if m and not periods:  # "in July 2021": that month
        mo = _MONTHS.index(m.group(1)) + 1
        y = int(m.group(2))
        date_from = dt.date(y, mo, 1)
        date_to = dt.date(y + (mo == 12), mo % 12 + 1, 1) - dt.timedelta(days=1)
    m = None if date_from else re.search(r"\b(?:in|during) (\d{4})\b", t)
    if m and not periods:
        y = int(m.group(1))
        date_from, date_to = dt.date(y, 1, 1), dt.date(y, 12, 31)
    m = re.search(r"\b(?:last|past) (\d+) days\b", t)
    if m:
        date_from, date_to = as_of - dt.timedelta(days=int(m.group(1))), as_of
    seen: list[str] = []
    for p in periods:
        if p not in seen:
            seen.append(p)
    return seen, date_from, date_to


def quarters_without_year(text: str) -> list[int]:
    """Quarter numbers named without a year ("third quarter", "Q3"), which mean the latest such
    fiscal quarter of each named company."""
    t = text.lower()
    out: list[int] = []
    t = re.sub(r"\b(first|second|third|fourth|1st|2nd|3rd|4th)-quarter\b", r"\1 quarter", t)
    for m in re.finditer(
        r"\b(first|second|third|fourth|1st|2nd|3rd|4th) (?:fiscal )?quarter\b(?!\s+(?:of\s+)?(?:fiscal\s+(?:year\s+)?)?'?\d{2,4})", t
    ):
        out.append(_ORD[m.group(1)])
    for m in re.finditer(r"\bq([1-4])\b(?!\s*(?:fy)?\s*'?\d{2,4})", t):
        out.append(int(m.group(1)))
    return list(dict.fromkeys(out))


def parse_tickers(text: str, tickers: dict[str, list[str]] | NameIndex) -> list[str]:
    """Tickers named by symbol or by company name (:mod:`.names`), in order of mention."""
    names = tickers if isinstance(tickers, NameIndex) else NameIndex.from_aliases(tickers)
    return names.resolve(text)[0]


def parse_query(text: str, tickers: dict[str, list[str]] | NameIndex, as_of: dt.date) -> ParsedQuery:
    """Structured filters of a query. ``tickers``: the universe's names (:class:`.names.NameIndex`,
    or symbol → lower-case aliases)."""
    low = text.lower()
    q = ParsedQuery(text=text)
    names = tickers if isinstance(tickers, NameIndex) else NameIndex.from_aliases(tickers)
    named = names.named(text)
    q.tickers = [t for c in named for t in c.tickers]
    q.companies = [c.key for c in named]
    q.company_tickers = [list(c.tickers) for c in named]
    for name, pats in METRICS.items():
        if any(re.search(rf"(?<![\w]){re.escape(p)}{PLURAL}(?![\w])", low) for p in pats):  # "outlooks", "buybacks"
            q.metrics.append(name)
    if any(m in q.metrics for m in ("gross margin", "operating margin", "net margin")) and "margin" in q.metrics:
        q.metrics.remove("margin")
    q.periods, q.date_from, q.date_to = parse_periods(text, as_of)
    q.quarters_without_year = quarters_without_year(text)
    for k, v in FORMS.items():
        if re.search(rf"(?<![\w]){re.escape(k)}(?![\w])", low) and v not in q.form_types:
            q.form_types.append(v)
    q.latest = bool(re.search(r"\b(latest|most recent|newest|last)\b", low))
    q.sections = [name for name, pat in _SECTION_PATS.items() if pat.search(text)]
    if "risk factors" not in q.sections and _RISK.search(text) and {"10-K", "10-Q"} & set(q.form_types):
        q.sections.insert(0, "risk factors")  # "risks in Apple's latest 10-K": its risk factors
    years = [int(y) for y in _YEAR.findall(text)]
    q.named_until = q.date_to or (dt.date(max(years), 12, 31) if years else None)
    q.is_comparison = bool(_COMPARE.search(text)) or len(q.companies) >= 2
    q.is_quantitative = bool(set(q.metrics) & QUANT_METRICS) or bool(_QUANT.search(text))
    q.is_earnings = bool(_EARNINGS.search(text))
    if _RISK.search(text):
        q.query_type = "risk"
    elif q.is_comparison and q.is_quantitative:
        q.query_type = "comparison"
    elif q.is_quantitative:
        q.query_type = "quantitative"
    elif _SAY.search(text):
        q.query_type = "statement"
    return q
