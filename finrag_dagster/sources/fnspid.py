"""FNSPID news (CSV or parquet with the original column names) -> the ``news_raw`` table.

Formats read
------------
* FNSPID news CSV: ``Date, Article_title, Stock_symbol, Url, Publisher, Author, Article,
  Lsa_summary, Luhn_summary, Textrank_summary, Lexrank_summary`` (extra columns such as
  ``Year`` / ``sentiment_score`` / ``Unnamed: 0`` ignored; quoted multi-line ``Article`` fields).
* Parquet with the same column names (``Date`` tz-aware UTC, naive = UTC, or ISO strings);
  a ``date_has_time`` column, when present, decides the time precision, and
  ``title_from_url_slug=True`` titles are percent-decoded.

Time
----
Stamps are parsed as ISO 8601 ("2021-12-31 00:00:00+00:00", "2020-06-05 06:30:54 UTC",
"2021-03-01 14:05:00-05:00"; no offset = UTC) into ``source_time`` (UTC). A stamp at exactly
00:00:00 UTC carries no time of day (FNSPID's nasdaq.com rows): ``time_precision="date"`` and
``public_time = date_only_public_time(date)`` (23:59:59 New York), so the item is decided on
the next session. Otherwise ``public_time = source_time``. ``dates_only=True`` treats every
row as date-only (FNSPID's "UTC" offsets are unreliable, see PROVENANCE).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd
import polars as pl

from ..core.calendar import date_only_public_ns, nyse
from ..core.schemas import NEWS_RAW
from ..core.text import sentences
from .base import LoadResult, SourceError, empty_quarantine, expand_paths, quarantine_rows, stable_id

FNSPID_COLUMNS = (
    "Date", "Article_title", "Stock_symbol", "Url", "Publisher", "Author", "Article",
    "Lsa_summary", "Luhn_summary", "Textrank_summary", "Lexrank_summary",
)
SUMMARY_COLUMNS = ("Lsa_summary", "Luhn_summary", "Textrank_summary", "Lexrank_summary")
# Columns kept in a quarantine row's ``raw`` JSON (the article body is left out: it can be MBs).
RAW_COLUMNS = ("Date", "Stock_symbol", "Article_title", "Url", "Publisher")

R_MISSING_DATE = "missing Date"
R_BAD_DATE = "unparseable Date"
R_NO_TICKER = "missing Stock_symbol"
R_NOT_UNIVERSE = "ticker not in universe"
R_NO_TITLE_URL = "missing title and url"
R_OUT_OF_CALENDAR = "public time outside the trading calendar"
R_DUPLICATE = "duplicate of an earlier row (same ticker, url, source_time)"

_TZ_SUFFIX = re.compile(r"\s*(?:UTC|GMT|Z)$", re.IGNORECASE)
_DAY_NS = 86_400 * 10**9


# ---------------------------------------------------------------------------- parsing
def parse_news_times(values: list[str | None]) -> np.ndarray:
    """ISO 8601 stamps to int64 UTC nanoseconds (``np.iinfo(int64).min`` where unparseable).

    " UTC" / "GMT" / "Z" suffixes mean +00:00; a stamp without offset is taken as UTC.
    """
    norm = pd.Series([None if v is None else _TZ_SUFFIX.sub("+00:00", str(v).strip()) or None for v in values],
                     dtype=object)
    ts = pd.to_datetime(norm, utc=True, format="ISO8601", errors="coerce")
    return ts.astype("datetime64[ns, UTC]").array.asi8.copy()


def _cols(df: pl.DataFrame, fname: str) -> dict[str, str]:
    """Map canonical FNSPID names to the file's own spelling (case-insensitive)."""
    lower = {c.strip().lower(): c for c in df.columns}
    got = {c: lower[c.lower()] for c in FNSPID_COLUMNS if c.lower() in lower}
    for extra in ("date_has_time", "title_from_url_slug"):
        if extra in lower:
            got[extra] = lower[extra]
    if "Date" not in got or "Stock_symbol" not in got or not ({"Article_title", "Url"} & got.keys()):
        raise SourceError(
            f"{fname}: not an FNSPID news file (needs Date, Stock_symbol and Article_title or Url; "
            f"has {df.columns[:15]})"
        )
    return got


def read_news_file(path: Path) -> pl.DataFrame:
    """One FNSPID file as normalised columns.

    Returns
    -------
    pl.DataFrame
        ``ts_ns`` (Int64 UTC ns, null if unparseable), ``has_time`` (Boolean or null),
        ``slug_title`` (Boolean), the FNSPID text columns as stripped strings ("" when missing),
        ``source_file`` and ``source_row`` (0-based data row).
    """
    name = path.name.lower()
    if name.endswith(".csv") or name.endswith(".csv.gz"):
        try:
            df = pl.read_csv(path, infer_schema=False, encoding="utf8-lossy")
        except Exception as exc:  # polars raises several types for malformed CSV
            raise SourceError(f"{path.name}: cannot be read as CSV ({exc})") from exc
    elif name.endswith(".parquet"):
        df = pl.read_parquet(path)
    else:
        raise SourceError(f"{path.name}: unknown news file format (expected .csv or .parquet)")
    cols = _cols(df, path.name)
    n = df.height

    date = df[cols["Date"]]
    if date.dtype == pl.Datetime:
        tz = date.dtype.time_zone
        d = date if tz else date.dt.replace_time_zone("UTC")
        ts_ns = d.dt.convert_time_zone("UTC").dt.cast_time_unit("ns").dt.epoch("ns")
        date_text = d.dt.to_string("%Y-%m-%d %H:%M:%S%z")
    elif date.dtype == pl.Date:
        ts_ns = date.cast(pl.Datetime("ns")).dt.epoch("ns")
        date_text = date.cast(pl.Utf8)
    else:
        date_text = date.cast(pl.Utf8)
        raw_ns = parse_news_times(date_text.to_list())
        ts_ns = pl.Series(np.where(raw_ns == np.iinfo(np.int64).min, None, raw_ns).tolist(), dtype=pl.Int64)

    def text(c: str) -> pl.Series:
        if c not in cols:
            return pl.Series(c, [""] * n, dtype=pl.Utf8)
        return df[cols[c]].cast(pl.Utf8).fill_null("").str.strip_chars().alias(c)

    def flag(c: str) -> pl.Series:
        if c not in cols:
            return pl.Series(c, [None] * n, dtype=pl.Boolean)
        return df[cols[c]].cast(pl.Boolean).alias(c)

    return pl.DataFrame(
        [
            ts_ns.alias("ts_ns").cast(pl.Int64),
            date_text.fill_null("").alias("Date"),
            flag("date_has_time").alias("has_time"),
            flag("title_from_url_slug").fill_null(False).alias("slug_title"),
            *[text(c) for c in FNSPID_COLUMNS if c != "Date"],
            pl.Series("source_file", [path.name] * n, dtype=pl.Utf8),
            pl.Series("source_row", range(n), dtype=pl.Int64),
        ]
    )


# ---------------------------------------------------------------------------- fields
def slug_title(url: str) -> str:
    """A readable title from a URL's last path segment ("" when there is none)."""
    seg = [s for s in urlparse(url).path.split("/") if s]
    if not seg:
        return ""
    slug = re.sub(r"\.(html?|php|aspx?)$", "", unquote(seg[-1]))
    slug = re.sub(r"[-_+]+", " ", slug)
    return re.sub(r"\s+", " ", slug).strip()


def pick_summary(summaries: tuple[str, ...], article: str) -> str:
    """First non-empty extractive summary, else the article's first two sentences, else ""."""
    for s in summaries:
        if s:
            return s
    return " ".join(sentences(article)[:2])


def _title(title: str, slug: bool, url: str) -> str:
    if title and slug:
        return unquote(title).strip()
    return title or slug_title(url)


# ---------------------------------------------------------------------------- loader
def _empty_news() -> pl.DataFrame:
    return pl.from_arrow(NEWS_RAW.schema.empty_table()).with_columns(pl.lit(None, dtype=pl.Date).alias("date"))


def _quarantine(df: pl.DataFrame, raw_cols: tuple[str, ...]) -> pl.DataFrame:
    """Quarantine rows of ``df`` (with a ``reason`` column), ``raw`` = the listed columns as JSON."""
    if df.height == 0:
        return empty_quarantine()
    parts = [
        quarantine_rows(df.filter(pl.col("reason") == r).select("source_file", "source_row", *raw_cols), r)
        for r in sorted(df["reason"].unique().to_list())
    ]
    return pl.concat(parts).sort("source_file", "source_row", "reason")


def load_news(paths, universe_tickers: set[str], dates_only: bool = False) -> LoadResult:
    """Read FNSPID news files into ``news_raw`` rows plus quarantine.

    Parameters
    ----------
    paths : str, Path or list of them
        Files, globs or directories (their ``*.csv`` / ``*.parquet``), read in sorted order.
    universe_tickers : set of str
        Tickers kept; other rows are quarantined.
    dates_only : bool
        Treat every stamp as a date (published after that day's close).

    Returns
    -------
    LoadResult
        ``accepted`` has the NEWS_RAW columns plus ``date`` (decision day), sorted by
        (public_time, news_id). One quarantine reason per row, first failing check in the order:
        Date missing/unparseable, missing Stock_symbol, ticker not in universe, missing title
        and url, public time outside the calendar, duplicate (ticker, url, source_time) of an
        earlier accepted row.
    """
    files = expand_paths(paths, ("*.csv", "*.parquet", "*.csv.gz"))
    if not files:
        return LoadResult("news_raw", _empty_news(), empty_quarantine(), 0).check()
    df = pl.concat([read_news_file(f) for f in files], how="vertical")
    rows_in = df.height
    if rows_in == 0:
        return LoadResult("news_raw", _empty_news(), empty_quarantine(), 0).check()

    cal = nyse()
    universe = sorted({t.strip().upper() for t in universe_tickers})
    df = df.with_columns(ticker=pl.col("Stock_symbol").str.to_uppercase())

    # time precision and public time
    ts = df["ts_ns"].to_numpy(allow_copy=True)
    valid_ts = ~df["ts_ns"].is_null().to_numpy()
    ts_f = np.where(valid_ts, ts, 0).astype(np.int64)
    if dates_only:
        is_date = np.ones(rows_in, dtype=bool)
    else:
        midnight = (ts_f % _DAY_NS) == 0
        has_time = df["has_time"]
        is_date = np.where(has_time.is_null().to_numpy(), midnight, ~has_time.fill_null(True).to_numpy())
    public = ts_f.copy()
    d_idx = np.flatnonzero(valid_ts & is_date)
    if len(d_idx):
        days = (ts_f[d_idx] // _DAY_NS).astype("datetime64[D]")
        public[d_idx] = date_only_public_ns(days)
    in_cal = valid_ts & (public >= cal.opens_ns[0]) & (public <= cal.closes_ns[-1])

    df = df.with_columns(
        pl.Series("public_ns", public, dtype=pl.Int64),
        pl.Series("is_date", is_date, dtype=pl.Boolean),
        pl.Series("in_cal", in_cal, dtype=pl.Boolean),
    )
    reason = (
        pl.when(pl.col("ts_ns").is_null() & (pl.col("Date") == "")).then(pl.lit(R_MISSING_DATE))
        .when(pl.col("ts_ns").is_null()).then(pl.lit(R_BAD_DATE))
        .when(pl.col("ticker") == "").then(pl.lit(R_NO_TICKER))
        .when(~pl.col("ticker").is_in(universe)).then(pl.lit(R_NOT_UNIVERSE))
        .when((pl.col("Article_title") == "") & (pl.col("Url") == "")).then(pl.lit(R_NO_TITLE_URL))
        .when(~pl.col("in_cal")).then(pl.lit(R_OUT_OF_CALENDAR))
        .otherwise(pl.lit(None, dtype=pl.Utf8))
    )
    df = df.with_columns(reason.alias("reason"))
    # exact duplicates among rows that passed every other check: the first (file order, row) wins
    ok = pl.col("reason").is_null()
    first = pl.struct("ticker", "Url", "ts_ns").is_first_distinct().over(ok)
    df = df.with_columns(pl.when(ok & ~first).then(pl.lit(R_DUPLICATE)).otherwise(pl.col("reason")).alias("reason"))

    bad = df.filter(pl.col("reason").is_not_null())
    quarantine = _quarantine(bad, RAW_COLUMNS)
    good = df.filter(pl.col("reason").is_null())
    accepted = _accepted_frame(good, cal) if good.height else _empty_news()
    return LoadResult("news_raw", accepted, quarantine, rows_in).check()


def _accepted_frame(good: pl.DataFrame, cal) -> pl.DataFrame:
    """Build the NEWS_RAW columns (+ date) for rows that passed every check."""
    titles = [_title(t, s, u) for t, s, u in zip(good["Article_title"], good["slug_title"], good["Url"])]
    summaries = [
        pick_summary(tuple(s), a)
        for s, a in zip(zip(*(good[c] for c in SUMMARY_COLUMNS)), good["Article"])
    ]
    src_time = good["ts_ns"].cast(pl.Datetime("ns", "UTC"))
    iso = [t.isoformat() for t in src_time.to_list()]
    ids = [stable_id("N", tk, u, s, ti) for tk, u, s, ti in zip(good["ticker"], good["Url"], iso, titles)]
    decision = cal.decision_days(good["public_ns"].to_numpy())
    out = pl.DataFrame(
        {
            "news_id": ids,
            "ticker": good["ticker"],
            "public_time": good["public_ns"].cast(pl.Datetime("ns", "UTC")).dt.cast_time_unit("us"),
            "source_time": src_time.dt.cast_time_unit("us"),
            "time_precision": np.where(good["is_date"].to_numpy(), "date", "second"),
            "title": titles,
            "summary": summaries,
            "article": good["Article"],
            "url": good["Url"],
            "publisher": good["Publisher"],
            "source_file": good["source_file"],
            "source_row": good["source_row"],
            "date": pl.Series(decision.astype("datetime64[D]")).cast(pl.Date),
        }
    )
    schema = _empty_news().schema
    return out.select([pl.col(c).cast(t) for c, t in schema.items()]).sort("public_time", "news_id")


__all__ = ["load_news", "read_news_file", "parse_news_times", "slug_title", "pick_summary"]
