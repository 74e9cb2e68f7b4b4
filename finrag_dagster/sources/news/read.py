"""Reading one FNSPID news file (CSV or parquet with the original column names) into normalised
columns: the lazy scan the loader streams (:func:`news_source`) and the rows' shape
(:func:`normalize_news`). A gzipped CSV reaches these as the CSV the loader decompressed it to, so it
passes every check a CSV does. Bad files: docs/bad_inputs.md, "News (FNSPID)".
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from ..base import SourceError
from ..csvcheck import MAX_NEWS_RECORD_BYTES, check_csv_format, csv_problem, duplicate_column, gzip_named_csv, header_names, is_utf8, scan_records
from .clock import _wall_clock, parse_news_times
from .columns import FNSPID_COLUMNS, ROW_INDEX


def _cols(names: list[str], fname: str) -> dict[str, str]:
    """Map canonical FNSPID names to the file's own spelling (case-insensitive)."""
    lower = {c.strip().lower(): c for c in names}
    got = {c: lower[c.lower()] for c in FNSPID_COLUMNS if c.lower() in lower}
    for extra in ("date_has_time", "title_from_url_slug"):
        if extra in lower:
            got[extra] = lower[extra]
    missing = [c for c in ("Date", "Stock_symbol") if c not in got] + ([] if {"Article_title", "Url"} & got.keys() else ["Article_title or Url"])
    if missing:
        raise SourceError(
            f"{fname}: not an FNSPID news file: missing column {', '.join(missing)} "
            f"(needs Date, Stock_symbol and Article_title or Url; has {names[:15]})"
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
            # a ragged record is read as far as the header goes: the loader quarantines it by its row
            lf = pl.scan_csv(path, infer_schema=False, encoding="utf8-lossy", truncate_ragged_lines=True)
        elif name.endswith(".parquet"):
            _check_header(pq.read_schema(path).names, path.name)
            lf = pl.scan_parquet(path)
        else:
            raise SourceError(f"{path.name}: unknown news file format (expected .csv, .csv.gz or .parquet)")
        names = lf.collect_schema().names()  # the header only
    except SourceError:
        raise
    except Exception as exc:  # polars raises several types for malformed files
        raise SourceError(f"{path.name}: cannot be read as {'CSV' if name.endswith('.csv') else 'parquet'} ({str(exc).splitlines()[0]})") from exc
    return lf, _cols(names, path.name), repaired


def read_news_file(path: Path) -> pl.DataFrame:
    """One FNSPID file, read whole, as :func:`normalize_news` columns (the replay tool's reader;
    the loader streams, see :mod:`.load`)."""
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


def normalize_news(df: pl.DataFrame, cols: dict[str, str], source_file: str, repaired: bool) -> pl.DataFrame:
    """Rows of one news file (with their 0-based data row in ``__source_row``) as normalised columns.

    Returns
    -------
    pl.DataFrame
        ``ts_ns`` (Int64 UTC ns, null if unparseable), ``wall_day``, ``wall_sec`` and ``naive`` (the
        stamp's own wall clock), ``minute_only`` (a time of day written without seconds),
        ``has_time`` (Boolean or null),
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
        no_sec = pl.Series([False] * n, dtype=pl.Boolean)
    elif date.dtype == pl.Date:
        ts_ns = date.cast(pl.Datetime("ns")).dt.epoch("ns")
        date_text = date.cast(pl.Utf8)
        wall_day, wall_sec = date, pl.Series([0] * n, dtype=pl.Int32)
        naive = pl.Series([False] * n, dtype=pl.Boolean)
        no_sec = pl.Series([False] * n, dtype=pl.Boolean)
    else:
        date_text = date.cast(pl.Utf8)
        raw_ns = parse_news_times(date_text.to_list())
        ts_ns = pl.Series(np.where(raw_ns == np.iinfo(np.int64).min, None, raw_ns).tolist(), dtype=pl.Int64)
        wall_day, wall_sec, naive, no_sec = _wall_clock(date_text.to_list())

    def text(c: str) -> pl.Series:
        if c not in cols:
            return pl.Series(c, [""] * n, dtype=pl.Utf8)
        return df[cols[c]].cast(pl.Utf8).fill_null("").str.strip_chars().alias(c)

    def flag(c: str) -> pl.Series:
        if c not in cols:
            return pl.Series(c, [None] * n, dtype=pl.Boolean)
        return _flag_column(df[cols[c]], source_file).alias(c)

    return pl.DataFrame(
        [
            ts_ns.alias("ts_ns").cast(pl.Int64),
            wall_day.alias("wall_day").cast(pl.Date),
            wall_sec.alias("wall_sec").cast(pl.Int32),
            naive.alias("naive").cast(pl.Boolean),
            no_sec.alias("minute_only").cast(pl.Boolean),
            date_text.fill_null("").alias("Date"),
            flag("date_has_time").alias("has_time"),
            flag("title_from_url_slug").fill_null(False).alias("slug_title"),
            *[text(c) for c in FNSPID_COLUMNS if c != "Date"],
            pl.Series("source_file", [source_file] * n, dtype=pl.Utf8),
            df[ROW_INDEX].cast(pl.Int64).alias("source_row"),
        ]
    ).with_columns(_repaired_expr(repaired).alias("repaired"))


_TRUE, _FALSE = ("true", "t", "1", "yes"), ("false", "f", "0", "no")


def _flag_column(col: pl.Series, source_file: str) -> pl.Series:
    """A yes/no column (``date_has_time``, ``title_from_url_slug``) as Boolean: a parquet's own
    Booleans, or a CSV's text true/false (t/f, 1/0, yes/no, any case; empty is unknown). Any other
    text stops the load: a flag that cannot be read would silently decide a row's clock."""
    if col.dtype == pl.Boolean:
        return col
    if col.dtype != pl.Utf8:
        return col.cast(pl.Boolean)
    text = col.str.strip_chars().str.to_lowercase()
    bad = text.filter(text.is_not_null() & (text != "") & ~text.is_in(_TRUE + _FALSE))
    if bad.len():
        raise SourceError(f"{source_file}: column {col.name}: {bad[0]!r} is not true or false ({bad.len():,} such rows)")
    return text.replace_strict({**dict.fromkeys(_TRUE, True), **dict.fromkeys(_FALSE, False)}, default=None, return_dtype=pl.Boolean)


def _repaired_expr(file_repaired: bool) -> pl.Expr:
    """Rows of a file that was not valid UTF-8 whose text now carries U+FFFD."""
    if not file_repaired:
        return pl.lit(False)
    return pl.any_horizontal([pl.col(c).str.contains("\ufffd", literal=True) for c in FNSPID_COLUMNS])
