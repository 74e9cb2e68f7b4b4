"""FNSPID news (CSV or parquet with the original column names) -> the ``news_raw`` table.

Stamps are parsed as ISO 8601 into ``source_time`` (UTC); each row then gets a precision (``date``,
``minute`` or ``second``) and a ``public_time`` (:func:`news_public_ns`): a timestamp stands for the
end of its precision. Every row is date-only by default, because FNSPID's offsets are known to be
applied the wrong way; a user trusts a publisher's or a file's clock explicitly (:class:`NewsClock`).
The formats read and the time rules: docs/time.md, "News (FNSPID)" and "`sources/fnspid.py`:
design notes"; bad rows: docs/bad_inputs.md, "News (FNSPID)".
"""

from __future__ import annotations

import csv
import datetime as dt
import fnmatch
import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd
import polars as pl
import pyarrow.parquet as pq

from ..core.calendar import date_only_public_ns
from ..core.storage.schemas import NEWS_RAW
from ..core.text import sentences
from .base import (
    FLAG_COLUMNS,
    SourceError,
    empty_flags,
    stable_id,
)
from .csvcheck import MAX_NEWS_RECORD_BYTES, check_csv_format, csv_problem, duplicate_column, gzip_named_csv, header_names, is_utf8, scan_records

FNSPID_COLUMNS = (
    "Date",
    "Article_title",
    "Stock_symbol",
    "Url",
    "Publisher",
    "Author",
    "Article",
    "Lsa_summary",
    "Luhn_summary",
    "Textrank_summary",
    "Lexrank_summary",
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
R_AFTER_END = "decision day after the calendar's end (calendar.end)"
F_REPAIRED = "non-UTF-8 bytes replaced by U+FFFD"
R_DUPLICATE = "duplicate of an earlier row (same ticker, url, source_time)"
R_BEFORE_START = "decision day before the calendar's start (calendar.start)"
R_RAGGED = "ragged row"  # followed by ": 3 fields where the header has 11"
R_OVERSIZED = "record over the size limit, not read"  # followed by ": 209,715,200 bytes (limit 8,388,608)"
F_NAIVE_TIME = "naive_time"
F_TITLE_FROM_URL = "title_from_url"

_TZ_SUFFIX = re.compile(r"\s*(?:UTC|GMT|Z)$", re.IGNORECASE)
_NO_OFFSET = re.compile(r"^(?:\.\d+)?\s*$")  # what follows a wall time that gives no offset
_WALL = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?")
_DAY_NS = 86_400 * 10**9
_SEC_NS = 10**9
NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class NewsClock:
    """Whose time of day is trusted (docs/method.md §1: a source's clock is trusted only where it is known
    to be right).

    ``dates_only`` (the default) reads every stamp as a date, except rows whose ``Publisher`` is
    in ``trusted_publishers`` (exact, case-insensitive) or whose file name matches one of
    ``trusted_files`` (shell patterns such as ``"aapl*.csv"``). ``dates_only=False`` trusts every
    clock.
    """

    dates_only: bool = True
    trusted_publishers: tuple[str, ...] = ()
    trusted_files: tuple[str, ...] = ()

    def trusted(self, publishers: list[str], files: list[str]) -> np.ndarray:
        """Boolean array: whose time of day is trusted, row by row."""
        n = len(publishers)
        if not self.dates_only:
            return np.ones(n, dtype=bool)
        pubs = {p.strip().lower() for p in self.trusted_publishers if p.strip()}
        file_ok = {f: any(fnmatch.fnmatch(f, pat) for pat in self.trusted_files) for f in set(files)}
        return np.array([(p or "").strip().lower() in pubs or file_ok[f] for p, f in zip(publishers, files)], dtype=bool)

    def describe(self) -> dict:
        return {"dates_only": self.dates_only, "trusted_publishers": sorted(self.trusted_publishers), "trusted_files": sorted(self.trusted_files)}


# ---------------------------------------------------------------------------- parsing
def parse_news_times(values: list[str | None]) -> np.ndarray:
    """ISO 8601 stamps to int64 UTC nanoseconds (``np.iinfo(int64).min`` where unparseable).

    " UTC" / "GMT" / "Z" suffixes mean +00:00; a stamp without offset is taken as UTC.
    """
    norm = pd.Series([None if v is None else _TZ_SUFFIX.sub("+00:00", str(v).strip()) or None for v in values], dtype=object)
    ts = pd.to_datetime(norm, utc=True, format="ISO8601", errors="coerce")
    return ts.astype("datetime64[ns, UTC]").array.asi8.copy()


def _cols(df: pl.DataFrame, fname: str) -> dict[str, str]:
    """Map canonical FNSPID names to the file's own spelling (case-insensitive)."""
    lower = {c.strip().lower(): c for c in df.columns}
    got = {c: lower[c.lower()] for c in FNSPID_COLUMNS if c.lower() in lower}
    for extra in ("date_has_time", "title_from_url_slug"):
        if extra in lower:
            got[extra] = lower[extra]
    missing = [c for c in ("Date", "Stock_symbol") if c not in got] + ([] if {"Article_title", "Url"} & got.keys() else ["Article_title or Url"])
    if missing:
        raise SourceError(
            f"{fname}: not an FNSPID news file: missing column {', '.join(missing)} "
            f"(needs Date, Stock_symbol and Article_title or Url; has {df.columns[:15]})"
        )
    return got


def _check_header(names: list[str], fname: str) -> None:
    """A SourceError for a header that names a column twice: which of the two is the field?"""
    dup = duplicate_column(names)
    if dup:
        raise SourceError(f"{fname}: {dup}: the file is ambiguous; rename or remove one")


def news_source(path: Path) -> tuple[pl.LazyFrame, dict[str, str], bool]:
    """A lazy scan of one news file, its column map (:func:`_cols`) and whether its bytes were
    repaired (a CSV that is not valid UTF-8). Nothing but the header is parsed here.

    Raises
    ------
    SourceError
        Not a news file, an unknown format, or a malformed CSV (naming the line).
    """
    name = path.name.lower()
    repaired = False
    try:
        if name.endswith(".csv"):
            problem = gzip_named_csv(path)
            if problem:
                raise SourceError(problem)
            check_csv_format(path)  # UTF-16, another delimiter
            problem = csv_problem(path)
            if problem:
                raise SourceError(f"{path.name}: not a well-formed CSV: the record starting at {problem}")
            _check_header(header_names(path), path.name)
            repaired = not is_utf8(path)
            head = pl.read_csv(path, infer_schema=False, encoding="utf8-lossy", n_rows=0)
            # a ragged record is read as far as the header goes: the loader quarantines it by its row
            lf = pl.scan_csv(path, infer_schema=False, encoding="utf8-lossy", truncate_ragged_lines=True)
        elif name.endswith(".csv.gz"):  # compressed: read whole (decompress a big file to stream it)
            with gzip.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as fh:
                _check_header(next(csv.reader(fh), []), path.name)
            lf = pl.read_csv(path, infer_schema=False, encoding="utf8-lossy").lazy()
            head = lf.head(0).collect()
        elif name.endswith(".parquet"):
            _check_header(pq.read_schema(path).names, path.name)
            lf = pl.scan_parquet(path)
            head = lf.head(0).collect()
        else:
            raise SourceError(f"{path.name}: unknown news file format (expected .csv or .parquet)")
    except SourceError:
        raise
    except Exception as exc:  # polars raises several types for malformed files
        raise SourceError(f"{path.name}: cannot be read as {'CSV' if '.csv' in name else 'parquet'} ({str(exc).splitlines()[0]})") from exc
    return lf, _cols(head, path.name), repaired


def read_news_file(path: Path) -> pl.DataFrame:
    """One FNSPID file, read whole, as :func:`normalize_news` columns (the replay tool's reader;
    the loader streams, see :mod:`.news_stage`)."""
    if path.name.lower().endswith(".csv"):
        problem = gzip_named_csv(path)
        if problem:
            raise SourceError(problem)
        check_csv_format(path)
        scan_records(path, MAX_NEWS_RECORD_BYTES)  # CR line ends (the staging loader scans every CSV this way)
    lf, cols, repaired = news_source(path)
    try:
        df = lf.with_row_index(ROW_INDEX).collect()
    except Exception as exc:
        raise SourceError(f"{path.name}: cannot be read ({str(exc).splitlines()[0]})") from exc
    return normalize_news(df, cols, path.name, repaired)


ROW_INDEX = "__source_row"


def normalize_news(df: pl.DataFrame, cols: dict[str, str], source_file: str, repaired: bool) -> pl.DataFrame:
    """Rows of one news file (with their 0-based data row in ``__source_row``) as normalised columns.

    Returns
    -------
    pl.DataFrame
        ``ts_ns`` (Int64 UTC ns, null if unparseable), ``has_time`` (Boolean or null),
        ``slug_title`` (Boolean), the FNSPID text columns as stripped strings ("" when missing),
        ``source_file``, ``source_row`` and ``repaired``.
    """
    n = df.height
    date = df[cols["Date"]]
    if date.dtype == pl.Datetime:
        tz = date.dtype.time_zone
        d = date if tz else date.dt.replace_time_zone("UTC")
        ts_ns = d.dt.convert_time_zone("UTC").dt.cast_time_unit("ns").dt.epoch("ns")
        date_text = d.dt.to_string("%Y-%m-%d %H:%M:%S%z")
        wall_day = d.dt.date()
        wall_sec = d.dt.hour().cast(pl.Int32) * 3600 + d.dt.minute().cast(pl.Int32) * 60 + d.dt.second().cast(pl.Int32)
        naive = pl.Series([tz is None] * n, dtype=pl.Boolean)
    elif date.dtype == pl.Date:
        ts_ns = date.cast(pl.Datetime("ns")).dt.epoch("ns")
        date_text = date.cast(pl.Utf8)
        wall_day, wall_sec = date, pl.Series([0] * n, dtype=pl.Int32)
        naive = pl.Series([False] * n, dtype=pl.Boolean)
    else:
        date_text = date.cast(pl.Utf8)
        raw_ns = parse_news_times(date_text.to_list())
        ts_ns = pl.Series(np.where(raw_ns == np.iinfo(np.int64).min, None, raw_ns).tolist(), dtype=pl.Int64)
        wall_day, wall_sec, naive = _wall_clock(date_text.to_list())

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
            wall_day.alias("wall_day").cast(pl.Date),
            wall_sec.alias("wall_sec").cast(pl.Int32),
            naive.alias("naive").cast(pl.Boolean),
            date_text.fill_null("").alias("Date"),
            flag("date_has_time").alias("has_time"),
            flag("title_from_url_slug").fill_null(False).alias("slug_title"),
            *[text(c) for c in FNSPID_COLUMNS if c != "Date"],
            pl.Series("source_file", [source_file] * n, dtype=pl.Utf8),
            df[ROW_INDEX].cast(pl.Int64).alias("source_row"),
        ]
    ).with_columns(_repaired_expr(repaired).alias("repaired"))


def _repaired_expr(file_repaired: bool) -> pl.Expr:
    """Rows of a file that was not valid UTF-8 whose text now carries U+FFFD."""
    if not file_repaired:
        return pl.lit(False)
    return pl.any_horizontal([pl.col(c).str.contains("\ufffd", literal=True) for c in FNSPID_COLUMNS])


def _wall_clock(values: list[str | None]) -> tuple[pl.Series, pl.Series, pl.Series]:
    """The date and seconds since midnight as written in each stamp (its own offset's wall clock),
    and whether a stamp with a time of day gives no UTC offset (naive)."""
    days, secs, naive = [], [], []
    for v in values:
        m = _WALL.match(v or "")
        if not m:
            days.append(None)
            secs.append(None)
            naive.append(False)
            continue
        try:
            days.append(dt.date.fromisoformat(m.group(1)))
        except ValueError:
            days.append(None)
            secs.append(None)
            naive.append(False)
            continue
        h, mi, se = (int(g) if g else 0 for g in m.group(2, 3, 4))
        secs.append(h * 3600 + mi * 60 + se)
        naive.append(m.group(2) is not None and _NO_OFFSET.match(v[m.end() :]) is not None)
    return pl.Series(days, dtype=pl.Date), pl.Series(secs, dtype=pl.Int32), pl.Series(naive, dtype=pl.Boolean)


def _clock_parts(frame: pl.DataFrame, clock: NewsClock) -> dict[str, np.ndarray]:
    """Per row: whether the stamp parsed, its UTC ns, its wall-clock day, whether it is read as a
    date only, and whether it is a trusted timed stamp on a whole minute."""
    valid = ~frame["ts_ns"].is_null().to_numpy()
    ts = np.where(valid, frame["ts_ns"].fill_null(0).to_numpy(), 0).astype(np.int64)
    wall_sec = frame["wall_sec"].fill_null(0).to_numpy().astype(np.int64)
    wall_day = frame["wall_day"].to_numpy().astype("datetime64[D]")
    utc_day = (ts // _DAY_NS).astype("datetime64[D]")
    wall_day = np.where(np.isnat(wall_day), utc_day, wall_day)
    has_time = frame["has_time"]
    no_time = has_time.is_not_null().to_numpy() & ~has_time.fill_null(True).to_numpy()
    trusted = clock.trusted(frame["Publisher"].to_list(), frame["source_file"].to_list())
    # a trusted time of day without a UTC offset is ambiguous (New York? UTC?): read as a date, flagged
    stamp_naive = frame["naive"].fill_null(False).to_numpy() if "naive" in frame.columns else np.zeros(len(valid), dtype=bool)
    naive = trusted & ~no_time & (wall_sec != 0) & stamp_naive
    is_date = ~trusted | no_time | (wall_sec == 0) | naive
    timed = valid & ~is_date
    on_minute = (ts % (60 * _SEC_NS)) == 0
    return {"valid": valid, "ts": ts, "wall_day": wall_day, "is_date": is_date, "timed": timed, "on_minute": on_minute, "naive": valid & naive}


def minute_stats(frame: pl.DataFrame, clock: NewsClock) -> pl.DataFrame:
    """Per (source_file, Publisher): trusted timed stamps and how many fall on a whole minute (a
    source is minute-precise when the two are equal, over the whole file)."""
    if frame.height == 0:
        return pl.DataFrame(schema={"f": pl.Utf8, "p": pl.Utf8, "timed": pl.Int64, "on_minute": pl.Int64})
    c = _clock_parts(frame, clock)
    return (
        pl.DataFrame({"f": frame["source_file"], "p": frame["Publisher"], "t": c["timed"], "m": c["timed"] & c["on_minute"]})
        .group_by("f", "p")
        .agg(pl.col("t").sum().cast(pl.Int64).alias("timed"), pl.col("m").sum().cast(pl.Int64).alias("on_minute"))
        .sort("f", "p")
    )


def news_public_ns(frame: pl.DataFrame, clock: NewsClock = NewsClock(), minute: pl.DataFrame | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Public time (int64 UTC ns; :data:`NEVER` where unparseable) and precision ("date",
    "minute", "second") of each row of :func:`normalize_news`'s frame (docs/method.md §1: a timestamp
    stands for the end of its precision; only trusted clocks give a time of day).

    ``minute``: :func:`minute_stats` of the whole file(s) when ``frame`` is only a batch of them
    (minute precision is a property of a whole source); by default it is taken from ``frame``.
    """
    n = frame.height
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
    c = _clock_parts(frame, clock)
    valid, ts, wall_day, is_date, timed = c["valid"], c["ts"], c["wall_day"], c["is_date"], c["timed"]
    # minute precision: a trusted source (file, publisher) whose timed stamps all have zero seconds
    stats = minute_stats(frame, clock) if minute is None else minute
    src = pl.DataFrame({"f": frame["source_file"], "p": frame["Publisher"]})
    all_minute = (
        src.join(stats, on=["f", "p"], how="left", maintain_order="left")
        .select((pl.col("timed") == pl.col("on_minute")).fill_null(False))
        .to_series()
        .to_numpy()
    )
    is_minute = timed & all_minute
    public = ts.copy()
    public[is_minute] += 59 * _SEC_NS
    d_idx = np.flatnonzero(valid & is_date)
    if len(d_idx):
        public[d_idx] = date_only_public_ns(wall_day[d_idx])
    public[~valid] = NEVER
    precision = np.where(is_date, "date", np.where(is_minute, "minute", "second")).astype(object)
    return public, precision


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


def check_news_rows(
    df: pl.DataFrame,
    universe: list[str],
    clock: NewsClock,
    cal,
    calendar_end: dt.date | None,
    minute: pl.DataFrame | None = None,
    calendar_start: dt.date | None = None,
) -> pl.DataFrame:
    """:func:`normalize_news` rows with ``ticker``, ``public_ns``, ``precision``, ``naive_time``
    (a trusted time of day without an offset, read as a date) and ``reason`` (null: accepted so
    far; duplicates are found across all files later)."""
    rows_in = df.height
    df = df.with_columns(ticker=pl.col("Stock_symbol").str.to_uppercase())
    public, precision = news_public_ns(df, clock, minute)
    trusting = not clock.dates_only or bool(clock.trusted_publishers or clock.trusted_files)
    naive = _clock_parts(df, clock)["naive"] if trusting and rows_in else np.zeros(rows_in, dtype=bool)
    valid_ts = public != NEVER
    in_cal = valid_ts & (public >= cal.opens_ns[0]) & (public <= cal.closes_ns[-1])
    before_start = np.zeros(rows_in, dtype=bool)
    if calendar_start is not None and in_cal.any():
        idx = np.flatnonzero(in_cal)
        before_start[idx] = cal.decision_days(public[idx]).astype("datetime64[D]") < np.datetime64(calendar_start, "D")
    after_end = np.zeros(rows_in, dtype=bool)
    if calendar_end is not None and in_cal.any():
        end_close = int(
            cal.closes_for(
                np.array([cal.previous_session(calendar_end) if not cal.is_session(calendar_end) else calendar_end], dtype="datetime64[D]")
            )[0]
        )
        after_end = in_cal & (public > end_close)

    df = df.with_columns(
        pl.Series("public_ns", np.where(valid_ts, public, 0), dtype=pl.Int64),
        pl.Series("precision", precision.astype(str), dtype=pl.Utf8),
        pl.Series("in_cal", in_cal, dtype=pl.Boolean),
        pl.Series("after_end", after_end, dtype=pl.Boolean),
        pl.Series("before_start", before_start, dtype=pl.Boolean),
        pl.Series("naive_time", naive, dtype=pl.Boolean),
    )
    reason = (
        pl.when(pl.col("ts_ns").is_null() & (pl.col("Date") == ""))
        .then(pl.lit(R_MISSING_DATE))
        .when(pl.col("ts_ns").is_null())
        .then(pl.lit(R_BAD_DATE))
        .when(pl.col("ticker") == "")
        .then(pl.lit(R_NO_TICKER))
        .when(~pl.col("ticker").is_in(universe))
        .then(pl.lit(R_NOT_UNIVERSE))
        .when((pl.col("Article_title") == "") & (pl.col("Url") == ""))
        .then(pl.lit(R_NO_TITLE_URL))
        .when(~pl.col("in_cal"))
        .then(pl.lit(R_OUT_OF_CALENDAR))
        .when(pl.col("before_start"))
        .then(pl.lit(R_BEFORE_START))
        .when(pl.col("after_end"))
        .then(pl.lit(R_AFTER_END))
        .otherwise(pl.lit(None, dtype=pl.Utf8))
    )
    return df.with_columns(reason.alias("reason"))


def raw_json(df: pl.DataFrame) -> pl.Series:
    """The :data:`RAW_COLUMNS` of each row as JSON (a quarantine row's ``raw``)."""
    return pl.Series("raw", [json.dumps(r, default=str, sort_keys=True) for r in df.select(RAW_COLUMNS).to_dicts()], dtype=pl.Utf8)


def _repair_flags(good: pl.DataFrame, cal) -> pl.DataFrame:
    rep = good.filter(pl.col("repaired"))
    if rep.height == 0:
        return empty_flags()
    days = cal.decision_days(rep["public_ns"].to_numpy()).astype("datetime64[D]")
    return pl.DataFrame(
        {
            "source_file": rep["source_file"],
            "source_row": rep["source_row"],
            "ticker": rep["ticker"],
            "date": pl.Series(days).cast(pl.Date),
            "flag": [F_REPAIRED] * rep.height,
            "detail": ["the file is not valid UTF-8; undecodable bytes in this row were replaced"] * rep.height,
        },
        schema=FLAG_COLUMNS,
    ).sort("source_file", "source_row")


def _title_flags(good: pl.DataFrame, cal) -> pl.DataFrame:
    """``title_from_url`` flags: a row without ``Article_title`` whose title was read from its URL's
    last path segment (kept: the headline is what BM25, the embeddings and the anchor see)."""
    rows = good.filter((pl.col("Article_title") == "") & ~pl.col("slug_title"))
    if rows.height == 0:
        return empty_flags()
    days = cal.decision_days(rows["public_ns"].to_numpy()).astype("datetime64[D]")
    return pl.DataFrame(
        {
            "source_file": rows["source_file"],
            "source_row": rows["source_row"],
            "ticker": rows["ticker"],
            "date": pl.Series(days).cast(pl.Date),
            "flag": [F_TITLE_FROM_URL] * rows.height,
            "detail": [f"no Article_title: the title {slug_title(u)!r} was read from the Url {u!r}" for u in rows["Url"].to_list()],
        },
        schema=FLAG_COLUMNS,
    )


def _naive_flags(good: pl.DataFrame, cal) -> pl.DataFrame:
    """``naive_time`` flags: a trusted source's stamp with a time of day but no UTC offset, read as
    a date (public after that day's close) because its time zone is unknown."""
    rows = good.filter(pl.col("naive_time"))
    if rows.height == 0:
        return empty_flags()
    days = cal.decision_days(rows["public_ns"].to_numpy()).astype("datetime64[D]")
    detail = [
        f"Date {d!r} has a time of day but no UTC offset: read as a date (public after that day's close); "
        "write the offset (e.g. 2021-03-01 14:05:00-05:00) to use its time of day"
        for d in rows["Date"].to_list()
    ]
    return pl.DataFrame(
        {
            "source_file": rows["source_file"],
            "source_row": rows["source_row"],
            "ticker": rows["ticker"],
            "date": pl.Series(days).cast(pl.Date),
            "flag": [F_NAIVE_TIME] * rows.height,
            "detail": detail,
        },
        schema=FLAG_COLUMNS,
    )


def _accepted_frame(good: pl.DataFrame, cal, keep_order: bool = False) -> pl.DataFrame:
    """Build the NEWS_RAW columns (+ date) for rows that passed every check (in their order when
    ``keep_order``, else sorted by public time and id)."""
    titles = [_title(t, s, u) for t, s, u in zip(good["Article_title"], good["slug_title"], good["Url"])]
    summaries = [pick_summary(tuple(s), a) for s, a in zip(zip(*(good[c] for c in SUMMARY_COLUMNS)), good["Article"])]
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
            "time_precision": good["precision"],
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
    out = out.select([pl.col(c).cast(t) for c, t in schema.items()])
    return out if keep_order else out.sort("public_time", "news_id")


__all__ = [
    "NewsClock",
    "check_news_rows",
    "minute_stats",
    "news_public_ns",
    "news_source",
    "normalize_news",
    "parse_news_times",
    "pick_summary",
    "read_news_file",
    "slug_title",
]
