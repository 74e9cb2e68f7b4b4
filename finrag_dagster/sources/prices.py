"""Daily bars (FNSPID price CSV, yfinance CSV, or a prices parquet) -> the ``prices`` table.

One source per ticker: the first source, in sorted path order (and sorted ``source_path`` order
within a file), that holds a ticker supplies all of its rows; that ticker's rows in any later source
are quarantined. Nothing is repaired silently: a file that cannot be parsed or would be misread is a
:class:`SourceError` naming the file (and the line, for CSV), a bad row is quarantined with its
reason, and kept rows that look suspect are reported in ``LoadResult.flags``. The formats read and
every rule: docs/bad_inputs.md, "Prices" and "`sources/prices.py`: design notes".
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.calendar import TradingCalendar, nyse
from ..core.settings import HORIZON_NAMES, HORIZONS
from ..core.storage.schemas import PRICES
from .base import (
    FLAG_COLUMNS,
    LoadResult,
    SourceError,
    empty_flags,
    empty_quarantine,
    expand_paths,
    quarantine_rows,
)
from .csvcheck import MAX_PRICE_RECORD_BYTES, check_csv_format, duplicate_column, gzip_named_csv, scan_records

FIELDS = ("open", "high", "low", "close", "adj_close", "volume")
R_BAD_DATE = "unparseable or missing date"
# A bar's date: YYYY-MM-DD, optionally with the time part exporters add (``2023-07-12 00:00:00-04:00``,
# ``2023-07-12T00:00:00Z``); anything else after the date (``2023-07-12xyz``, ``2023-07-123``) is not one.
BAR_DATE = r"^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$"
R_NO_TICKER = "missing ticker"
R_NOT_UNIVERSE = "ticker not in universe"
R_NOT_SESSION = "date is not an XNYS session"
R_OUT_OF_CALENDAR = "date outside the trading calendar range"
R_BAD_ADJ = "missing, NaN or non-positive adj_close"
R_BAD_NUMBER = "unparseable number in a price field"  # followed by ": field='text'"
R_BAD_CLOSE = "non-positive or NaN close with a valid adj_close"
R_HIGH_LOW = "high below low"
R_OUTSIDE_RANGE = "open or close outside [low, high]"
R_DUPLICATE = "duplicate (ticker, date)"
R_DUPLICATE_DIFFERS = "duplicate (ticker, date) whose values differ from the kept first row's: "  # + the fields
R_NON_FINITE = "infinite price"
R_NONPOSITIVE_OHL = "non-positive open, high or low"
R_NEGATIVE_VOLUME = "negative volume"
F_LARGE_MOVE = "large_move"
F_BASIS_JUMP = "basis_jump"
F_MISSING_SESSION = "missing_session"
# cells that mean "no value" rather than a number that failed to parse
_MISSING_TOKENS = {"", "null", "none", "na", "n/a", "nan"}


def _num(values: list) -> tuple[list[float | None], list[str | None]]:
    """Numbers, and for each cell the text when it is neither a number nor a missing-value token."""
    out: list[float | None] = []
    bad: list[str | None] = []
    for v in values:
        if v is None:
            out.append(None)
            bad.append(None)
            continue
        text = str(v).strip()
        try:
            out.append(float(text))  # "1,234.5" is not read as 1234.5: a comma may be a decimal one
            bad.append(None)
        except ValueError:
            out.append(None)
            bad.append(None if text.lower() in _MISSING_TOKENS else text)
    return out, bad


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _frame(path: Path, source: str, ticker: list[str], date: list, cols: dict[str, list]) -> pl.DataFrame:
    n = len(date)
    parsed = {f: _num(cols.get(f, [None] * n)) for f in FIELDS}
    bad_number = ["; ".join(f"{f}={parsed[f][1][i]!r}" for f in FIELDS if parsed[f][1][i] is not None) or None for i in range(n)]
    return pl.DataFrame(
        {
            "ticker": pl.Series(ticker, dtype=pl.Utf8),
            "date_raw": pl.Series([None if d is None else str(d) for d in date], dtype=pl.Utf8),
            **{f: pl.Series(parsed[f][0], dtype=pl.Float64) for f in FIELDS},
            "bad_number": pl.Series(bad_number, dtype=pl.Utf8),
            "source_file": pl.Series([path.name] * n, dtype=pl.Utf8),
            "source": pl.Series([source] * n, dtype=pl.Utf8),
            "source_row": pl.Series(range(n), dtype=pl.Int64),
        }
    )


def _csv_records(path: Path, text: str) -> list[list[str]]:
    """CSV records of a price file. A record that cannot be parsed (an unterminated quote, text after
    a closing quote) or whose field count differs from the header's is a SourceError naming the file
    and the line where the record starts. A blank line stays a record (an empty row, which the loader
    quarantines for its missing date), so rows stay one-to-one with the file's records."""
    reader = csv.reader(io.StringIO(text), strict=True)
    rows: list[list[str]] = []
    width = None
    line = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            hint = " (an unterminated quote?)" if "unexpected end of data" in str(e) else ""
            raise SourceError(f"{path}: line {line}: cannot parse CSV record: {e}{hint}") from None
        if row and width is None:
            width = len(row)
        elif row and len(row) != width:
            hint = " (a trailing comma?)" if len(row) > width and not "".join(row[width:]).strip() else ""
            raise SourceError(f"{path}: line {line}: ragged row: {len(row)} fields where the header has {width}{hint}")
        rows.append(row)
        line = reader.line_num + 1
    return rows


# Price CSV columns by layout: an FNSPID file (one header row) must have every one; a yfinance export
# (a ticker row under the header) may lack Adj Close, when its Close is the adjusted close.
FNSPID_CSV_COLUMNS = ("date", "open", "high", "low", "close", "adj close", "volume")
YFINANCE_CSV_COLUMNS = ("date", "open", "high", "low", "close", "volume")
_ALIASES = {"adj_close": "adj close", "adjclose": "adj close"}


def _canonical(name: str) -> str:
    key = name.strip().lower()
    return _ALIASES.get(key, key)


def _csv_layout(rows: list[list[str]], stem_ticker: str) -> tuple[str, int]:
    """(ticker, header rows) of a price CSV: the file stem's ticker and one header row (FNSPID), or
    a yfinance export's ticker row (``Price``/``Ticker``/``Date`` rows, or a row repeating the
    ticker under an empty first cell)."""
    lower0 = rows[0][0].strip().lower() if rows[0] else ""
    if lower0 == "price" and len(rows) > 2 and rows[1] and rows[1][0].strip().lower() == "ticker":
        ticker = next((c.strip().upper() for c in rows[1][1:] if c.strip()), stem_ticker)
        return ticker, 3 if rows[2] and rows[2][0].strip().lower() == "date" else 2
    if len(rows) > 1 and rows[1] and rows[1][0].strip() == "":
        marks = {c.strip() for c in rows[1][1:] if c.strip()}
        if len(marks) == 1 and not _is_number(next(iter(marks))):
            return next(iter(marks)).upper(), 2
    return stem_ticker, 1


def _check_columns(path: Path, head: list[str], lower: list[str], skip: int) -> None:
    """A SourceError for a header that names a column twice (which one would a field be read
    from?) or lacks one of its layout's columns (a value would silently come out empty)."""
    dup = duplicate_column(head, _canonical)
    if dup:
        raise SourceError(f"{path.name}: {dup}: the file is ambiguous (an export that renamed 'Adj Close'?); rename or remove one")
    need = FNSPID_CSV_COLUMNS if skip == 1 else YFINANCE_CSV_COLUMNS
    missing = [c.title() for c in need if c not in lower]
    if missing:
        layout = "an FNSPID price CSV" if skip == 1 else "a yfinance price CSV"
        raise SourceError(
            f"{path.name}: not a price CSV: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"({layout} has {', '.join(c.title() for c in need)}; this header has {head})"
            + ("; if its closes are already split- and dividend-adjusted, add an Adj Close column equal to Close" if "Adj Close" in missing else "")
        )


def read_price_csv(path: Path) -> pl.DataFrame:
    """An FNSPID or yfinance price CSV as normalised rows (see module docstring).

    Raises SourceError (file and line) for a record that cannot be parsed or a ragged row."""
    problem = gzip_named_csv(path)
    if problem:
        raise SourceError(problem)
    check_csv_format(path)  # UTF-16, another delimiter
    records = scan_records(path, MAX_PRICE_RECORD_BYTES)  # bounded memory: no record over the limit is read
    if records.oversized:
        i, (_, length) = min(records.oversized.items())
        raise SourceError(f"{path.name}: record {i + 1} is {length:,} bytes, over the {MAX_PRICE_RECORD_BYTES:,}-byte limit for a price row")
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    rows = _csv_records(path, text)
    if not rows:
        raise SourceError(f"{path.name}: empty price file")
    head = [h.strip() for h in rows[0]]
    ticker, skip = _csv_layout(rows, path.name.split(".")[0].upper())
    lower = [_canonical(h) for h in head]
    if skip > 1:
        lower[0] = "date"  # a yfinance export's first header cell (Price) heads its dates
    data = rows[skip:]
    if not data:  # (a one-line file too: a header whatever it holds)
        raise SourceError(f"{path.name}: a header and no bars: {ticker} would have no prices (remove the file or fill it)")
    _check_columns(path, head, lower, skip)
    idx = {name: i for i, name in enumerate(lower)}

    def column(*names: str) -> list:
        for nm in names:
            if nm in idx:
                i = idx[nm]
                return [r[i].strip() if i < len(r) and r[i].strip() != "" else None for r in data]
        return [None] * len(data)

    close = column("close")
    adj = column("adj close")
    if "adj close" not in idx:
        adj = close  # auto-adjusted yfinance export (_check_columns): Close is the adjusted close
    cols = {"open": column("open"), "high": column("high"), "low": column("low"), "close": close, "adj_close": adj, "volume": column("volume")}
    return _frame(path, path.name, [ticker] * len(data), column("date"), cols)


PARQUET_COLUMNS = ("ticker", "date", "open", "high", "low", "close", "adj_close", "volume")


def read_price_parquet(path: Path) -> pl.DataFrame:
    """A prices parquet (ticker, date, open, high, low, close, adj_close, volume[, source_path])."""
    try:
        names = pq.read_schema(path).names
        dup = duplicate_column(names, _canonical)
        if dup:
            raise SourceError(f"{path.name}: {dup}: the file is ambiguous; rename or remove one")
        df = pl.read_parquet(path)
    except (pl.exceptions.PolarsError, pa.ArrowException, OSError) as e:  # corrupt or truncated file
        raise SourceError(f"{path}: cannot read parquet: {e}") from None
    lower = {_canonical(c): c for c in df.columns}
    missing = [c for c in PARQUET_COLUMNS if _canonical(c) not in lower]
    if missing:
        raise SourceError(
            f"{path.name}: not a prices parquet: missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} (has {df.columns})"
        )
    lower = {k.replace(" ", "_"): v for k, v in lower.items()}
    date = df[lower["date"]]
    if date.dtype in (pl.Datetime, pl.Date):
        date = date.cast(pl.Date).cast(pl.Utf8)
    sub = lower.get("source_path") or lower.get("source_repo")
    source = (pl.lit(path.name + ":") + df[sub].cast(pl.Utf8).fill_null("")) if sub else pl.lit(path.name)
    try:
        out = df.select(
            pl.col(lower["ticker"]).cast(pl.Utf8).fill_null("").str.strip_chars().str.to_uppercase().alias("ticker"),
            date.alias("date_raw"),
            *[(pl.col(lower[f]).cast(pl.Float64) if f in lower else pl.lit(None, dtype=pl.Float64)).alias(f) for f in FIELDS],
            pl.lit(None, dtype=pl.Utf8).alias("bad_number"),
            pl.lit(path.name).alias("source_file"),
            source.alias("source"),
            pl.int_range(0, pl.len(), dtype=pl.Int64).alias("source_row"),
        )
    except pl.exceptions.PolarsError as e:  # e.g. a text price column holding a non-number
        raise SourceError(f"{path}: price columns are not numeric: {e}") from None
    return out


def read_price_file(path: Path) -> pl.DataFrame:
    name = path.name.lower()
    if name.endswith(".csv"):
        return read_price_csv(path)
    if name.endswith(".parquet"):
        return read_price_parquet(path)
    raise SourceError(f"{path.name}: unknown price file format (expected .csv or .parquet)")


def _empty_prices() -> pl.DataFrame:
    return pl.from_arrow(PRICES.schema.empty_table()).with_columns(pl.lit(None, dtype=pl.Date).alias("date"))


def load_prices(
    paths, universe_tickers: set[str], max_abs_move: float = 0.5, ohlc_tolerance: float = 1e-3, *, max_basis_jump: float = 0.1
) -> LoadResult:
    """Read price files into ``prices`` rows plus quarantine and quality flags.

    Parameters
    ----------
    paths : str, Path or list of them
        Files, globs or directories (their ``*.csv`` / ``*.parquet``), in sorted order.
    universe_tickers : set of str
        Tickers kept (the market proxy included).
    max_abs_move : float
        A daily ``adj_close`` move with ``|adj_close / previous adj_close - 1|`` above this is
        flagged ``large_move`` (the row is kept). Default 0.5 (50%).
    ohlc_tolerance : float
        Relative slack for the bar checks (``high >= low``, ``open``/``close`` inside
        ``[low, high]``): Yahoo bars are sometimes a cent outside their own range (QQQ 2019-07-19:
        open 193.84, high 193.83), which is kept; anything beyond this fraction is quarantined.
    max_basis_jump : float
        The ratio ``adj_close / close`` moves only by a dividend's share of the price on its
        ex-date; a change beyond this fraction from one bar to the next is flagged ``basis_jump``
        (a split basis that changes inside the file). Default 0.1 (10%).

    Returns
    -------
    LoadResult
        ``accepted``: PRICES columns plus ``date`` (the bar date), sorted by (date, ticker).
        Quarantine reasons, first failing check: unparseable date, missing ticker, ticker not in
        universe, ticker already supplied by an earlier source, date outside the calendar's
        range, not an XNYS session, unparseable number, bad adj_close, non-positive or NaN close
        (NaN only where the source otherwise gives closes), high below low, open or close outside
        [low, high], duplicate (ticker, date) within the source.
        ``flags``: ``large_move`` and ``missing_session`` rows (see the module docstring).

    Raises
    ------
    SourceError
        A path matches nothing, or a file cannot be parsed (the file, and for CSV the line).
    """
    _check_options(max_abs_move, ohlc_tolerance)
    if not max_basis_jump > 0:
        raise ValueError(f"max_basis_jump must be > 0, got {max_basis_jump}")
    files = expand_paths(paths, ("*.csv", "*.parquet"))
    if not files:
        return LoadResult("prices", _empty_prices(), empty_quarantine(), 0).check()
    df = _read_files(files)
    rows_in = df.height
    universe = sorted({t.strip().upper() for t in universe_tickers})
    cal = nyse()

    df = _with_source_owners(_with_dates(df))
    df = _with_calendar_checks(df, cal)
    df = _with_reasons(df, universe, ohlc_tolerance)

    bad = df.filter(pl.col("reason").is_not_null()).sort("_order")
    quarantine = _quarantine(bad)
    good = df.filter(pl.col("reason").is_null())
    accepted = _accepted(good)
    flags = pl.concat([_large_moves(good, max_abs_move), _basis_jumps(good, max_basis_jump), _missing_sessions(good, bad, cal)], how="vertical").sort(
        "ticker", "date", "flag", "source_file"
    )
    return LoadResult("prices", accepted, quarantine, rows_in, flags).check()


def _check_options(max_abs_move: float, ohlc_tolerance: float) -> None:
    """ValueError for a non-positive ``max_abs_move`` or a negative ``ohlc_tolerance``."""
    if not max_abs_move > 0:
        raise ValueError(f"max_abs_move must be > 0, got {max_abs_move}")
    if not ohlc_tolerance >= 0:
        raise ValueError(f"ohlc_tolerance must be >= 0, got {ohlc_tolerance}")


def _read_files(files: list[Path]) -> pl.DataFrame:
    """All files' rows, one frame, each row tagged with its file's index in sorted order (``_file``)."""
    return pl.concat(
        [read_price_file(f).with_columns(pl.lit(i, dtype=pl.Int64).alias("_file")) for i, f in enumerate(files)],
        how="vertical",
    )


def _with_dates(df: pl.DataFrame) -> pl.DataFrame:
    """The bar ``date`` parsed from ``date_raw`` (null when unparseable), and the row's input order (``_order``)."""
    d = pl.col("date_raw").str.strip_chars()
    return df.with_columns(
        pl.when(d.str.contains(BAR_DATE)).then(d.str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False)).alias("date"),
        pl.int_range(0, pl.len(), dtype=pl.Int64).alias("_order"),
    )


def _with_source_owners(df: pl.DataFrame) -> pl.DataFrame:
    """Each row's source rank and its ticker's owning source: files in sorted path order, sub-sources
    of a file by sorted name; the first source holding a ticker owns it (``_rank``, ``_owner_rank``,
    ``owner_source``)."""
    src_rank = (
        df.group_by("_file", "source")
        .len()
        .sort("_file", "source")
        .with_columns(pl.int_range(0, pl.len(), dtype=pl.Int64).alias("_rank"))
        .drop("len")
    )
    df = df.join(src_rank, on=["_file", "source"], how="left", maintain_order="left")
    owner = (
        df.filter(pl.col("ticker") != "")
        .group_by("ticker")
        .agg(pl.col("_rank").min().alias("_owner_rank"))
        .join(src_rank.rename({"source": "owner_source", "_rank": "_owner_rank"}).drop("_file"), on="_owner_rank")
    )
    return df.join(owner, on="ticker", how="left", maintain_order="left")


def _with_calendar_checks(df: pl.DataFrame, cal: TradingCalendar) -> pl.DataFrame:
    """Whether each row's date is an XNYS session (``is_session``) and inside the calendar's range (``in_range``)."""
    dates = df["date"].to_numpy().astype("datetime64[D]")
    pos = np.searchsorted(cal.sessions, dates)
    pos = np.clip(pos, 0, len(cal.sessions) - 1)
    has_date = ~df["date"].is_null().to_numpy()
    is_session = (cal.sessions[pos] == dates) & has_date
    in_range = has_date & (dates >= cal.sessions[0]) & (dates <= cal.sessions[-1])
    return df.with_columns(pl.Series("is_session", is_session, dtype=pl.Boolean), pl.Series("in_range", in_range, dtype=pl.Boolean))


def _with_reasons(df: pl.DataFrame, universe: list[str], ohlc_tolerance: float) -> pl.DataFrame:
    """Each row's quarantine ``reason`` (null when kept): the first failing check, then duplicates
    of a kept (ticker, date)."""
    df = df.with_columns(_reason(universe, ohlc_tolerance).alias("reason"))
    ok = pl.col("reason").is_null()
    first = pl.struct("ticker", "date").is_first_distinct().over(ok)
    # a duplicate that disagrees with the kept row says in which fields (two sources of one bar that differ)
    kept = [pl.col(f).first().over("ticker", "date", ok) for f in FIELDS]
    differs = pl.concat_list([pl.when(pl.col(f).ne_missing(k)).then(pl.lit(f)) for f, k in zip(FIELDS, kept)]).list.drop_nulls()
    dup = pl.when(differs.list.len() > 0).then(pl.lit(R_DUPLICATE_DIFFERS) + differs.list.join(", ")).otherwise(pl.lit(R_DUPLICATE))
    return df.with_columns(pl.when(ok & ~first).then(dup).otherwise(pl.col("reason")).alias("reason"))


def _reason(universe: list[str], ohlc_tolerance: float) -> pl.Expr:
    """The first failing row check, in the order the ``load_prices`` docstring lists them."""
    adj = pl.col("adj_close")
    close = pl.col("close").fill_nan(None)
    # a source with no close at all (auto-adjusted download stored with close null) does not provide
    # one; in any other source a missing close is a hole in the row, not a format
    has_close = close.is_not_null().any().over("_file", "source")
    bar_close = pl.when(has_close).then(close).otherwise(adj)  # the close on the OHLC basis
    op, hi, lo = (pl.col(c).fill_nan(None) for c in ("open", "high", "low"))
    tol = float(ohlc_tolerance)
    top, bottom = hi + tol * hi.abs(), lo - tol * lo.abs()
    bad_close = ((close <= 0) | (close.is_null() & has_close)).fill_null(False)
    high_low = (hi < bottom).fill_null(False)
    outside = ((op > top) | (op < bottom) | (bar_close > top) | (bar_close < bottom)).fill_null(False)
    return (
        pl.when(pl.col("date").is_null())
        .then(pl.lit(R_BAD_DATE))
        .when(pl.col("ticker") == "")
        .then(pl.lit(R_NO_TICKER))
        .when(~pl.col("ticker").is_in(universe))
        .then(pl.lit(R_NOT_UNIVERSE))
        .when(pl.col("_rank") != pl.col("_owner_rank"))
        .then(pl.lit("ticker already supplied by an earlier source: ") + pl.col("owner_source"))
        .when(~pl.col("in_range"))
        .then(pl.lit(R_OUT_OF_CALENDAR))
        .when(~pl.col("is_session"))
        .then(pl.lit(R_NOT_SESSION))
        .when(pl.col("bad_number").is_not_null())
        .then(pl.lit(R_BAD_NUMBER + ": ") + pl.col("bad_number"))
        .when(pl.any_horizontal(pl.col(c).is_infinite() for c in ("open", "high", "low", "close", "adj_close", "volume")).fill_null(False))
        .then(pl.lit(R_NON_FINITE))
        .when(adj.is_null() | adj.is_nan() | (adj <= 0))
        .then(pl.lit(R_BAD_ADJ))
        .when(bad_close)
        .then(pl.lit(R_BAD_CLOSE))
        .when(pl.any_horizontal(c <= 0 for c in (op, hi, lo)).fill_null(False))
        .then(pl.lit(R_NONPOSITIVE_OHL))
        .when((pl.col("volume") < 0).fill_null(False))
        .then(pl.lit(R_NEGATIVE_VOLUME))
        .when(high_low)
        .then(pl.lit(R_HIGH_LOW))
        .when(outside)
        .then(pl.lit(R_OUTSIDE_RANGE))
        .otherwise(pl.lit(None, dtype=pl.Utf8))
    )


def _quarantine(bad: pl.DataFrame) -> pl.DataFrame:
    """Quarantine rows of the rejected rows (in input order), grouped by reason, sorted by file and row."""
    if not bad.height:
        return empty_quarantine()
    raw_cols = ["ticker", "date_raw", *FIELDS, "source"]
    return pl.concat(
        [
            quarantine_rows(bad.filter(pl.col("reason") == r).select("source_file", "source_row", *raw_cols), r)
            for r in sorted(bad["reason"].unique().to_list())
        ]
    ).sort("source_file", "source_row", "reason")


def _accepted(good: pl.DataFrame) -> pl.DataFrame:
    """The kept rows as PRICES columns plus ``date`` (NaN prices and volume as null), sorted by (date, ticker)."""
    schema = _empty_prices().schema
    return (
        good.with_columns(
            pl.col("close").fill_nan(None),
            pl.col("open").fill_nan(None),
            pl.col("high").fill_nan(None),
            pl.col("low").fill_nan(None),
            pl.when(pl.col("volume").is_nan()).then(None).otherwise(pl.col("volume")).round(0).cast(pl.Int64).alias("volume"),
        )
        .select([pl.col(c).cast(t) for c, t in schema.items()])
        .sort("date", "ticker")
    )


def _flag_frame(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=FLAG_COLUMNS, orient="row") if rows else empty_flags()


def _pct(x: float | None) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:+.1%}"


def _large_moves(good: pl.DataFrame, max_abs_move: float) -> pl.DataFrame:
    """``large_move`` flags: |adj_close / previous accepted adj_close - 1| > max_abs_move."""
    g = good.select("ticker", "date", "close", "adj_close", "source_file", "source_row").sort("ticker", "date")
    g = g.with_columns(
        pl.col("date").shift(1).over("ticker").alias("_pd"),
        pl.col("adj_close").shift(1).over("ticker").alias("_pa"),
        pl.col("close").fill_nan(None).shift(1).over("ticker").alias("_pc"),
        pl.col("close").fill_nan(None).alias("_c"),
    ).with_columns((pl.col("adj_close") / pl.col("_pa") - 1).alias("_ret"))
    hit = g.filter(pl.col("_ret").abs() > max_abs_move)
    rows = []
    for r in hit.iter_rows(named=True):
        close_move = None if r["_c"] is None or r["_pc"] is None else r["_c"] / r["_pc"] - 1
        detail = (
            f"adj_close {r['_pa']:.6g} on {r['_pd']} -> {r['adj_close']:.6g}: {_pct(r['_ret'])}, beyond "
            f"+/-{max_abs_move:.0%}; close moved {_pct(close_move)}. adj_close already nets out splits and "
            "dividends, so neither explains it: a real move, or a split/basis error in the source"
        )
        rows.append((r["source_file"], r["source_row"], r["ticker"], r["date"], F_LARGE_MOVE, detail))
    return _flag_frame(rows)


def _basis_jumps(good: pl.DataFrame, max_basis_jump: float) -> pl.DataFrame:
    """``basis_jump`` flags: the adjustment ratio adj_close / close changes by more than
    ``max_basis_jump`` from a ticker's previous accepted bar (rows with a close only)."""
    g = (
        good.filter(pl.col("close").fill_nan(None).is_not_null())
        .select("ticker", "date", "close", "adj_close", "source_file", "source_row")
        .sort("ticker", "date")
        .with_columns((pl.col("adj_close") / pl.col("close")).alias("_r"))
        .with_columns(pl.col("_r").shift(1).over("ticker").alias("_pr"), pl.col("date").shift(1).over("ticker").alias("_pd"))
        .with_columns((pl.col("_r") / pl.col("_pr") - 1).alias("_jump"))
    )
    rows = []
    for r in g.filter(pl.col("_jump").abs() > max_basis_jump).iter_rows(named=True):
        detail = (
            f"adj_close/close {r['_pr']:.6g} on {r['_pd']} -> {r['_r']:.6g}: {_pct(r['_jump'])}, beyond +/-{max_basis_jump:.0%}. "
            "A dividend moves this ratio by its share of the price; a larger change means the file "
            "mixes split bases (close and adj_close adjusted for different splits)"
        )
        rows.append((r["source_file"], r["source_row"], r["ticker"], r["date"], F_BASIS_JUMP, detail))
    return _flag_frame(rows)


def _labels_needing(cal: TradingCalendar, k: int) -> str:
    """Decision days (with horizons) whose label needs the close of session ``k``: D = k for every
    horizon h, and D = k - h (whose close(D+h) is session k)."""
    need: dict[int, list[str]] = {}
    for h in HORIZONS:
        for d in (k, k - h):
            if d >= 0:
                need.setdefault(d, []).append(HORIZON_NAMES.get(h, f"{h}D"))
    return ", ".join(f"{cal.sessions[d].item()} ({' '.join(sorted(set(hs), key=hs.index))})" for d, hs in sorted(need.items()))


def _missing_sessions(good: pl.DataFrame, bad: pl.DataFrame, cal: TradingCalendar) -> pl.DataFrame:
    """``missing_session`` flags: XNYS sessions with no accepted bar between two accepted bars of a
    ticker (the flag's source_file/source_row are those of the bar after the gap)."""
    g = good.select("ticker", "date", "source_file", "source_row").sort("ticker", "date")
    if g.height == 0:
        return empty_flags()
    k = np.searchsorted(cal.sessions, g["date"].to_numpy().astype("datetime64[D]"))
    g = g.with_columns(pl.Series("_k", k, dtype=pl.Int64)).with_columns(
        pl.col("_k").shift(1).over("ticker").alias("_pk"), pl.col("date").shift(1).over("ticker").alias("_pd")
    )
    gaps = g.filter(pl.col("_k") - pl.col("_pk") > 1)
    if gaps.height == 0:
        return empty_flags()
    seen: dict[tuple, tuple] = {}  # (ticker, date) -> first quarantined row for it
    for r in (
        bad.filter(pl.col("ticker").is_in(gaps["ticker"].unique().to_list()) & pl.col("date").is_not_null())
        .select("ticker", "date", "source_file", "source_row", "reason")
        .iter_rows()
    ):
        seen.setdefault((r[0], r[1]), r[2:])
    rows = []
    for r in gaps.iter_rows(named=True):
        for kk in range(r["_pk"] + 1, r["_k"]):
            day = cal.sessions[kk].item()
            detail = f"no bar for {r['ticker']} on this XNYS session (bars on {r['_pd']} and {r['date']})"
            if (r["ticker"], day) in seen:
                f, row, why = seen[(r["ticker"], day)]
                detail += f"; {f} row {row} for this date was quarantined: {why}"
            detail += (
                f"; labels needing this close are missing_price: {r['ticker']} on decision days "
                f"{_labels_needing(cal, kk)} (every ticker's, if {r['ticker']} is the market proxy)"
            )
            rows.append((r["source_file"], r["source_row"], r["ticker"], day, F_MISSING_SESSION, detail))
    return _flag_frame(rows)


__all__ = ["load_prices", "read_price_csv", "read_price_file", "read_price_parquet"]
