"""Daily bars (FNSPID price CSV, yfinance CSV, or a prices parquet) -> the ``prices`` table.

Formats read
------------
* FNSPID price CSV ``Date,Open,High,Low,Close,Adj Close,Volume``; the ticker is the file stem
  upper-cased (``aapl.csv`` -> AAPL). Basis: raw (split-adjusted) OHLC/close plus Yahoo's split-
  and dividend-adjusted ``Adj Close``.
* yfinance CSV with a multi-row header: ``Date,Close,High,Low,Open,Volume`` then a row repeating
  the ticker (``,NVDA,NVDA,...``), or the newer ``Price,...`` / ``Ticker,...`` / ``Date,,,`` form.
  The ticker comes from that row. Without an ``Adj Close`` column the export is auto-adjusted
  (``auto_adjust=True``): OHLC are already split- and dividend-adjusted, so ``adj_close = Close``
  and ``close = Close`` (the same adjusted number, not the traded price).
* Parquet with columns ``ticker, date, open, high, low, close, adj_close, volume`` (``close`` may be
  null/NaN). A ``source_path`` (or ``source_repo``) column splits one file into several sources.

One source per ticker (PROVENANCE: adjusted closes from different downloads do not mix): the first
source, in sorted path order (and sorted ``source_path`` order within a file), that holds a ticker
supplies all of its rows; that ticker's rows in any later source are quarantined.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import polars as pl

from ..core.calendar import nyse
from ..core.schemas import PRICES
from .base import LoadResult, SourceError, empty_quarantine, expand_paths, quarantine_rows

FIELDS = ("open", "high", "low", "close", "adj_close", "volume")
R_BAD_DATE = "unparseable or missing date"
R_NO_TICKER = "missing ticker"
R_NOT_UNIVERSE = "ticker not in universe"
R_NOT_SESSION = "date is not an XNYS session"
R_OUT_OF_CALENDAR = "date outside the trading calendar range"
R_BAD_ADJ = "missing, NaN or non-positive adj_close"
R_DUPLICATE = "duplicate (ticker, date)"


def _num(values: list) -> list[float | None]:
    out: list[float | None] = []
    for v in values:
        if v is None:
            out.append(None)
            continue
        try:
            out.append(float(str(v).replace(",", "").strip()))
        except ValueError:
            out.append(None)
    return out


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


def _frame(path: Path, source: str, ticker: list[str], date: list, cols: dict[str, list]) -> pl.DataFrame:
    n = len(date)
    return pl.DataFrame(
        {
            "ticker": pl.Series(ticker, dtype=pl.Utf8),
            "date_raw": pl.Series([None if d is None else str(d) for d in date], dtype=pl.Utf8),
            **{f: pl.Series(_num(cols.get(f, [None] * n)), dtype=pl.Float64) for f in FIELDS},
            "source_file": pl.Series([path.name] * n, dtype=pl.Utf8),
            "source": pl.Series([source] * n, dtype=pl.Utf8),
            "source_row": pl.Series(range(n), dtype=pl.Int64),
        }
    )


def read_price_csv(path: Path) -> pl.DataFrame:
    """An FNSPID or yfinance price CSV as normalised rows (see module docstring)."""
    text = path.read_text(encoding="utf-8-sig", errors="replace")
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise SourceError(f"{path.name}: empty price file")
    head = [h.strip() for h in rows[0]]
    lower = [h.lower() for h in head]
    ticker = path.name.split(".")[0].upper()
    skip = 1
    if lower and lower[0] == "price" and len(rows) > 2 and rows[1] and rows[1][0].strip().lower() == "ticker":
        ticker = next((c.strip().upper() for c in rows[1][1:] if c.strip()), ticker)
        lower[0] = "date"
        skip = 3 if rows[2] and rows[2][0].strip().lower() == "date" else 2
    elif len(rows) > 1 and rows[1] and rows[1][0].strip() == "":
        marks = {c.strip() for c in rows[1][1:] if c.strip()}
        if len(marks) == 1 and not _is_number(next(iter(marks))):
            ticker = next(iter(marks)).upper()
            skip = 2
    if "date" not in lower or "close" not in lower and "adj close" not in lower:
        raise SourceError(f"{path.name}: not a price CSV (needs Date and Close/Adj Close; has {head})")
    idx = {name: i for i, name in enumerate(lower)}
    data = rows[skip:]

    def column(*names: str) -> list:
        for nm in names:
            if nm in idx:
                i = idx[nm]
                return [r[i].strip() if i < len(r) and r[i].strip() != "" else None for r in data]
        return [None] * len(data)

    close = column("close")
    adj = column("adj close", "adj_close", "adjclose")
    if all(a is None for a in adj) and "adj close" not in idx and "adj_close" not in idx:
        adj = close  # auto-adjusted export: Close is the adjusted close
    cols = {"open": column("open"), "high": column("high"), "low": column("low"), "close": close,
            "adj_close": adj, "volume": column("volume")}
    return _frame(path, path.name, [ticker] * len(data), column("date"), cols)


def read_price_parquet(path: Path) -> pl.DataFrame:
    """A prices parquet (ticker, date, open, high, low, close, adj_close, volume[, source_path])."""
    df = pl.read_parquet(path)
    lower = {c.lower(): c for c in df.columns}
    missing = [c for c in ("ticker", "date", "adj_close") if c not in lower]
    if missing:
        raise SourceError(f"{path.name}: not a prices parquet (missing {missing}; has {df.columns})")
    date = df[lower["date"]]
    if date.dtype in (pl.Datetime, pl.Date):
        date = date.cast(pl.Date).cast(pl.Utf8)
    sub = lower.get("source_path") or lower.get("source_repo")
    source = (
        (pl.lit(path.name + ":") + df[sub].cast(pl.Utf8).fill_null("")) if sub else pl.lit(path.name)
    )
    out = df.select(
        pl.col(lower["ticker"]).cast(pl.Utf8).fill_null("").str.strip_chars().str.to_uppercase().alias("ticker"),
        date.alias("date_raw"),
        *[
            (pl.col(lower[f]).cast(pl.Float64) if f in lower else pl.lit(None, dtype=pl.Float64)).alias(f)
            for f in FIELDS
        ],
        pl.lit(path.name).alias("source_file"),
        source.alias("source"),
        pl.int_range(0, pl.len(), dtype=pl.Int64).alias("source_row"),
    )
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


def load_prices(paths, universe_tickers: set[str]) -> LoadResult:
    """Read price files into ``prices`` rows plus quarantine.

    Parameters
    ----------
    paths : str, Path or list of them
        Files, globs or directories (their ``*.csv`` / ``*.parquet``), in sorted order.
    universe_tickers : set of str
        Tickers kept (the market proxy included).

    Returns
    -------
    LoadResult
        ``accepted``: PRICES columns plus ``date`` (the bar date), sorted by (date, ticker).
        Quarantine reasons, first failing check: unparseable date, missing ticker, ticker not in
        universe, ticker already supplied by an earlier source, date outside the calendar's
        range, not an XNYS session, bad
        adj_close, duplicate (ticker, date) within the source.
    """
    files = expand_paths(paths, ("*.csv", "*.parquet"))
    if not files:
        return LoadResult("prices", _empty_prices(), empty_quarantine(), 0).check()
    df = pl.concat(
        [read_price_file(f).with_columns(pl.lit(i, dtype=pl.Int64).alias("_file")) for i, f in enumerate(files)],
        how="vertical",
    )
    rows_in = df.height
    universe = sorted({t.strip().upper() for t in universe_tickers})
    cal = nyse()

    df = df.with_columns(
        pl.col("date_raw").str.strip_chars().str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False).alias("date"),
        pl.int_range(0, pl.len(), dtype=pl.Int64).alias("_order"),
    )
    # one source per ticker: files in sorted path order, sub-sources of a file by sorted name
    src_rank = (
        df.group_by("_file", "source").len().sort("_file", "source")
        .with_columns(pl.int_range(0, pl.len(), dtype=pl.Int64).alias("_rank")).drop("len")
    )
    df = df.join(src_rank, on=["_file", "source"], how="left", maintain_order="left")
    owner = (
        df.filter(pl.col("ticker") != "").group_by("ticker").agg(pl.col("_rank").min().alias("_owner_rank"))
        .join(src_rank.rename({"source": "owner_source", "_rank": "_owner_rank"}).drop("_file"), on="_owner_rank")
    )
    df = df.join(owner, on="ticker", how="left", maintain_order="left")

    dates = df["date"].to_numpy().astype("datetime64[D]")
    pos = np.searchsorted(cal.sessions, dates)
    pos = np.clip(pos, 0, len(cal.sessions) - 1)
    has_date = ~df["date"].is_null().to_numpy()
    is_session = (cal.sessions[pos] == dates) & has_date
    in_range = has_date & (dates >= cal.sessions[0]) & (dates <= cal.sessions[-1])
    df = df.with_columns(
        pl.Series("is_session", is_session, dtype=pl.Boolean), pl.Series("in_range", in_range, dtype=pl.Boolean)
    )

    adj = pl.col("adj_close")
    reason = (
        pl.when(pl.col("date").is_null()).then(pl.lit(R_BAD_DATE))
        .when(pl.col("ticker") == "").then(pl.lit(R_NO_TICKER))
        .when(~pl.col("ticker").is_in(universe)).then(pl.lit(R_NOT_UNIVERSE))
        .when(pl.col("_rank") != pl.col("_owner_rank"))
        .then(pl.lit("ticker already supplied by an earlier source: ") + pl.col("owner_source"))
        .when(~pl.col("in_range")).then(pl.lit(R_OUT_OF_CALENDAR))
        .when(~pl.col("is_session")).then(pl.lit(R_NOT_SESSION))
        .when(adj.is_null() | adj.is_nan() | (adj <= 0)).then(pl.lit(R_BAD_ADJ))
        .otherwise(pl.lit(None, dtype=pl.Utf8))
    )
    df = df.with_columns(reason.alias("reason"))
    ok = pl.col("reason").is_null()
    first = pl.struct("ticker", "date").is_first_distinct().over(ok)
    df = df.with_columns(pl.when(ok & ~first).then(pl.lit(R_DUPLICATE)).otherwise(pl.col("reason")).alias("reason"))

    bad = df.filter(pl.col("reason").is_not_null()).sort("_order")
    if bad.height:
        raw_cols = ["ticker", "date_raw", *FIELDS, "source"]
        quarantine = pl.concat(
            [
                quarantine_rows(bad.filter(pl.col("reason") == r).select("source_file", "source_row", *raw_cols), r)
                for r in sorted(bad["reason"].unique().to_list())
            ]
        ).sort("source_file", "source_row", "reason")
    else:
        quarantine = empty_quarantine()

    good = df.filter(pl.col("reason").is_null())
    schema = _empty_prices().schema
    accepted = good.with_columns(
        pl.col("close").fill_nan(None),
        pl.col("open").fill_nan(None),
        pl.col("high").fill_nan(None),
        pl.col("low").fill_nan(None),
        pl.when(pl.col("volume").is_nan()).then(None).otherwise(pl.col("volume")).round(0).cast(pl.Int64).alias("volume"),
    ).select([pl.col(c).cast(t) for c, t in schema.items()]).sort("date", "ticker")
    return LoadResult("prices", accepted, quarantine, rows_in).check()


__all__ = ["load_prices", "read_price_csv", "read_price_parquet", "read_price_file"]
