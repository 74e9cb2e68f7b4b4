"""The ticker universe from a ``tickers.csv`` (ticker, cik, sec_title, Security, gics_sector, ...).

``company`` = Security (else a ``company`` column, else sec_title); ``sector`` = gics_sector or
"Unknown"; ``aliases`` = the distinct lower-case names (Security/company, ``short_name`` when
present, sec_title) and their forms without legal suffixes, share class or SEC state codes.

Output follows :data:`core.storage.schemas.UNIVERSE`: one row per ticker, sorted by ticker, with the
market proxy (QQQ by default) flagged ``is_benchmark`` and added when the file lacks it.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import polars as pl

from ..core.storage.schemas import MEMBERSHIP, UNIVERSE
from .base import SourceError, expand_paths
from .csvcheck import check_csv_format, csv_problem, duplicate_column, header_names, is_utf8, scan_records

UNKNOWN_SECTOR = "Unknown"
BENCHMARK_SECTOR = "ETF"

# Trailing words that are legal form / share class, not part of how people name a company.
_SUFFIX = re.compile(
    r"(?:[\s,]+(?:inc|incorporated|corp|corporation|co|company|companies|holdings?|group|ltd|limited|"
    r"plc|llc|lp|l\.p|n\.?v|s\.?a|ag|se|the|class\s+[a-c]|series\s+\d+)\.?)+\s*$",
    re.IGNORECASE,
)
_PAREN = re.compile(r"\s*\([^)]*\)")
_STATE = re.compile(r"\s*/\s*[a-z]{2,3}\s*/?\s*$", re.IGNORECASE)  # SEC titles: "INC /DE", "/MD/"
_WS = re.compile(r"\s+")


def _text(value: object) -> str:
    """A cell as stripped text ('' for null / NaN)."""
    if value is None:
        return ""
    if isinstance(value, float) and value != value:
        return ""
    return str(value).strip()


def short_name(name: str) -> str:
    """Company name without parentheses, legal suffixes and share class, lower-case.

    Examples
    --------
    >>> short_name("Alphabet Inc. (Class A)")
    'alphabet'
    >>> short_name("The Kraft Heinz Company")
    'kraft heinz'
    """
    s = _STATE.sub("", _PAREN.sub("", name.lower()).strip())
    s = re.sub(r"^the\s+", "", s)
    prev = None
    while prev != s:
        prev = s
        s = _SUFFIX.sub("", s).strip(" ,.-&")
    return _WS.sub(" ", s)


def company_aliases(*names: str) -> str:
    """'|'-joined distinct lower-case names: each full name, then its short form.

    >>> company_aliases("Apple Inc.", "Apple Inc.")
    'apple inc.|apple'
    """
    out: list[str] = []
    for n in names:
        n = _STATE.sub("", _WS.sub(" ", n.strip().lower()))
        if not n:
            continue
        for a in (n, _PAREN.sub("", n).strip(), short_name(n)):
            a = a.replace("|", " ").strip()
            if len(a) >= 2 and a not in out:
                out.append(a)
    return "|".join(out)


def _parse_cik(value: object) -> int | None:
    s = _text(value)
    if not s:
        return None
    try:
        return int(float(s))
    except ValueError as exc:
        raise SourceError(f"universe: CIK {s!r} is not a number") from exc


_UNIVERSE_COLUMNS = ("ticker", "cik", "cik_sp500", "sec_title", "security", "company", "short_name", "gics_sector", "gics_sub_industry")


def _read_universe_csv(path: str | Path) -> tuple[Path, pl.DataFrame, dict[str, str]]:
    """(the file, its cells as text, lower-case column name -> column): one well-formed CSV with a ticker column."""
    files = expand_paths([path], dir_patterns=("tickers.csv",))
    if len(files) != 1:
        raise SourceError(f"universe: expected one file, {path!s} matches {len(files)}")
    f = files[0]
    if not f.name.lower().endswith(".csv"):
        raise SourceError(f"universe: {f.name} is not a CSV file")
    _check_csv(f, "universe")
    raw = pl.read_csv(f, infer_schema=False)
    cols = {c.strip().lower(): c for c in raw.columns}
    if "ticker" not in cols:
        raise SourceError(f"universe: {f.name} has no 'ticker' column: missing column ticker (columns: {raw.columns})")
    return f, raw, cols


UNIVERSE_RECORD_BYTES = 1 << 20  # a universe row is a few hundred bytes


def _check_csv(f: Path, what: str) -> None:
    """A SourceError (``what: ...``) naming the cause for a universe or membership file polars would
    misread: UTF-16 or another delimiter, CR line ends, a malformed or ragged record, bytes that are
    not UTF-8 (a company name would be garbled), or a column named twice."""
    try:
        check_csv_format(f)
        records = scan_records(f, UNIVERSE_RECORD_BYTES)
    except SourceError as exc:
        raise SourceError(f"{what}: {exc}") from None
    problem = csv_problem(f)
    if problem:
        raise SourceError(f"{what}: {f.name} is not a well-formed CSV: the record starting at {problem}")
    if records.ragged:
        i, n = min(records.ragged.items())
        raise SourceError(f"{what}: {f.name} data row {i - 1}: ragged row: {n} fields where the header has {records.header_fields}")
    if not is_utf8(f):
        raise SourceError(f"{what}: {f.name} is not valid UTF-8 (Latin-1 or Windows-1252?): re-save it as UTF-8")
    dup = duplicate_column(header_names(f))
    if dup:
        raise SourceError(f"{what}: {f.name}: {dup}: the file is ambiguous; rename or remove one")


def _universe_row(cells: tuple, market: str) -> dict:
    """One UNIVERSE row from a record's cells (in :data:`_UNIVERSE_COLUMNS` order; the ticker already checked)."""
    t, cik, cik2, title, sec, comp, short, sector, sub = cells
    ticker = _text(t).upper()
    company = _text(sec) or _text(comp) or _text(title) or ticker
    is_bench = ticker == market
    return {
        "ticker": ticker,
        "company": company,
        "sector": BENCHMARK_SECTOR if is_bench else (_text(sector) or UNKNOWN_SECTOR),
        "sub_industry": _text(sub) or None,
        "cik": _parse_cik(cik) if _text(cik) else _parse_cik(cik2),
        "aliases": company_aliases(_text(sec) or _text(comp), _text(short), _text(title)) or ticker.lower(),
        "is_benchmark": is_bench,
    }


def _benchmark_row(market: str) -> dict:
    """The market proxy's row when the file lacks it."""
    return {
        "ticker": market,
        "company": market,
        "sector": BENCHMARK_SECTOR,
        "sub_industry": None,
        "cik": None,
        "aliases": market.lower(),
        "is_benchmark": True,
    }


def load_universe(path: str | Path, market_ticker: str = "QQQ") -> pl.DataFrame:
    """Read the universe CSV into the UNIVERSE schema.

    Parameters
    ----------
    path : str or Path
        A ``tickers.csv`` (or a glob matching exactly one file).
    market_ticker : str
        The market proxy; flagged ``is_benchmark`` (sector "ETF") and added if missing.

    Returns
    -------
    pl.DataFrame
        Columns of :data:`UNIVERSE`, sorted by ticker.

    Raises
    ------
    SourceError
        Missing file, no ``ticker`` column, an empty ticker, or a duplicate ticker.
    """
    f, raw, cols = _read_universe_csv(path)
    columns = [raw[cols[name]].to_list() if name in cols else [None] * raw.height for name in _UNIVERSE_COLUMNS]
    market = market_ticker.strip().upper()
    rows, seen = [], set()
    for i, cells in enumerate(zip(*columns)):
        ticker = _text(cells[0]).upper()
        if not ticker:
            raise SourceError(f"universe: {f.name} data row {i} has an empty ticker")
        if ticker in seen:
            raise SourceError(f"universe: duplicate ticker {ticker} in {f.name}")
        seen.add(ticker)
        rows.append(_universe_row(cells, market))
    if market not in seen:
        rows.append(_benchmark_row(market))
    schema = pl.from_arrow(UNIVERSE.schema.empty_table()).schema
    return pl.DataFrame(rows, schema=schema).sort("ticker")


def load_membership(path: str | Path, tickers: set[str]) -> pl.DataFrame:
    """A membership CSV (``ticker,start,end``; dates YYYY-MM-DD, ``end`` empty while a member;
    several rows per ticker for re-entries) into the MEMBERSHIP schema.

    Raises
    ------
    SourceError
        Missing columns, an unparseable date, ``start`` after ``end``, overlapping intervals of
        one ticker, or a ticker not in the universe — naming the file and data row.
    """
    files = expand_paths([path], dir_patterns=("*.csv",))
    if len(files) != 1:
        raise SourceError(f"membership: expected one file, {path!s} matches {len(files)}")
    f = files[0]
    _check_csv(f, "membership")
    raw = pl.read_csv(f, infer_schema=False)
    cols = {c.strip().lower(): c for c in raw.columns}
    missing = [c for c in ("ticker", "start", "end") if c not in cols]
    if missing:
        raise SourceError(f"membership: {f.name} lacks column(s) {missing} (needs ticker,start,end)")
    rows = []
    for i, (t, a, b) in enumerate(zip(raw[cols["ticker"]], raw[cols["start"]], raw[cols["end"]], strict=True)):
        ticker = _text(t).upper()
        where = f"membership: {f.name} data row {i}"
        if ticker not in tickers:
            raise SourceError(f"{where}: ticker {ticker or '(empty)'} is not in the universe")
        try:
            start = dt.date.fromisoformat(_text(a))
            end = dt.date.fromisoformat(_text(b)) if _text(b) else None
        except ValueError:
            raise SourceError(f"{where}: dates must be YYYY-MM-DD (got start={_text(a)!r}, end={_text(b)!r})") from None
        if end is not None and end < start:
            raise SourceError(f"{where}: start {start} is after end {end}")
        rows.append({"ticker": ticker, "start": start, "end": end})
    df = pl.DataFrame(rows, schema=pl.from_arrow(MEMBERSHIP.schema.empty_table()).schema).sort("ticker", "start")
    prev = df.with_columns(
        pl.col("end").shift(1).over("ticker").alias("prev_end"), pl.col("end").is_null().shift(1).over("ticker").alias("prev_open")
    )
    bad = prev.filter(pl.col("prev_open").fill_null(False) | (pl.col("start") <= pl.col("prev_end")))
    if bad.height:
        r = bad.row(0, named=True)
        raise SourceError(f"membership: {f.name}: intervals of {r['ticker']} overlap (one starts {r['start']})")
    return df
