"""Which files a run reads: the embedded world's, or the user's (SourceSettings)."""

from __future__ import annotations

import glob
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ..core.settings import Settings
from .base import LoadResult, SourceError
from .news import NewsClock


@dataclass(frozen=True)
class SourcePaths:
    universe: str
    news: tuple[str, ...]
    prices: tuple[str, ...]
    filings_index: tuple[str, ...]
    filings_text: tuple[str, ...]
    market_ticker: str
    news_clock: NewsClock
    calendar_end: object = None  # dt.date: rows decided after it are quarantined
    calendar_start: object = None  # dt.date: rows decided before it are quarantined


def news_clock(settings: Settings) -> NewsClock:
    """Whose news clock is trusted: files are read as dates unless told otherwise; the embedded
    world's stamps are generated true."""
    src = settings.sources
    dates_only = src.news_dates_only if src.news_dates_only is not None else src.kind != "synthetic"
    return NewsClock(dates_only, tuple(src.news_trusted_publishers), tuple(src.news_trusted_files))


def world_raw(settings: Settings) -> Path:
    return settings.world_dir / "raw"


def source_paths(settings: Settings) -> SourcePaths:
    src = settings.sources
    if src.kind == "synthetic":
        raw = world_raw(settings)
        if not (raw / "universe" / "tickers.csv").exists():
            raise SourceError(
                f"the embedded world is not built under {raw}: materialise the `synthetic_world` asset or run `finrag world` (or `make demo`) first"
            )
        return SourcePaths(
            universe=str(raw / "universe" / "tickers.csv"),
            news=(str(raw / "news" / "*.csv"),),
            prices=(str(raw / "prices" / "*.csv"),),
            filings_index=(str(raw / "sec" / "submissions" / "*.json"), str(raw / "sec" / "sec-edgar-filings")),
            filings_text=(str(raw / "sec" / "sec-edgar-filings"),),
            market_ticker=settings.market_ticker,
            news_clock=news_clock(settings),
            calendar_end=settings.calendar.end,
            calendar_start=settings.calendar.start,
        )
    if not src.universe:
        raise SourceError("sources.kind = 'files' needs sources.universe (a tickers.csv)")
    return SourcePaths(
        universe=src.universe,
        news=tuple(src.news),
        prices=tuple(src.prices),
        filings_index=tuple(src.filings_index),
        filings_text=tuple(src.filings_text),
        market_ticker=settings.market_ticker,
        news_clock=news_clock(settings),
        calendar_end=settings.calendar.end,
        calendar_start=settings.calendar.start,
    )


def load_universe_frame(settings: Settings) -> pl.DataFrame:
    from .universe import load_universe

    sp = source_paths(settings)
    return load_universe(sp.universe, market_ticker=sp.market_ticker)


def load_membership_frame(settings: Settings, universe: pl.DataFrame) -> pl.DataFrame | None:
    """The configured membership intervals (``sources.membership``), or None (today's list)."""
    from .universe import load_membership

    if not settings.sources.membership:
        return None
    return load_membership(settings.sources.membership, set(universe["ticker"].to_list()))


def load_table(settings: Settings, table: str, universe: pl.DataFrame) -> LoadResult:
    """Read every configured file of one raw table (news_raw, prices or filings_raw)."""
    sp = source_paths(settings)
    tickers = set(universe["ticker"].to_list())
    if table == "news_raw":
        from .news import load_news

        if not sp.news:
            return _empty(table)
        return load_news(list(sp.news), tickers, clock=sp.news_clock, calendar_end=sp.calendar_end, calendar_start=sp.calendar_start).check()
    if table == "prices":
        from .prices import load_prices

        if not sp.prices:
            raise SourceError("no price files configured (sources.prices)")
        src = settings.sources
        res = load_prices(list(sp.prices), tickers, src.price_max_abs_move, src.price_ohlc_tolerance, max_basis_jump=src.price_max_basis_jump)
        check_market_prices(res, sp.market_ticker, sp.prices)
        return res.check()
    if table == "filings_raw":
        from .edgar import load_filings

        if not sp.filings_index and not sp.filings_text:
            return _empty(table)
        return load_filings(list(sp.filings_index), list(sp.filings_text), universe).check()
    raise KeyError(table)


def _expected_price_file(prices: tuple[str, ...], ticker: str) -> str:
    """Where a price CSV of ``ticker`` would be read from: beside the first configured price path (a
    CSV is named by its ticker, ``qqq.csv``)."""
    first = Path(str(prices[0])).expanduser()
    folder = first if first.is_dir() else first.parent
    return str(folder / f"{ticker.lower()}.csv")


def check_market_prices(res: LoadResult, market: str, prices: tuple[str, ...]) -> None:
    """The market proxy has accepted bars: every label's residual return and beta need its closes, so a
    load without them stops here, at ingest, not later at ``labels``.

    Raises
    ------
    SourceError
        Naming the market ticker, the price file expected for it, and why its rows were left out, if they were.
    """
    if res.accepted.height and market in set(res.accepted["ticker"].unique().to_list()):
        return
    q = res.quarantine.filter(pl.col("raw").str.contains(f'"ticker": "{market}"', literal=True)) if res.quarantine.height else res.quarantine
    if q.height:
        top = q.group_by("reason").agg(pl.col("rows").sum()).sort(["rows", "reason"], descending=[True, False]).row(0)
        why = f"all {int(q['rows'].sum()):,} of its rows were quarantined (most: {top[0]!r})"
    else:
        why = "no configured price file has a bar for it"
    raise SourceError(
        f"no prices for the market proxy {market} (market_ticker): {why}; every label needs its closes. Expected a price file "
        f"such as {_expected_price_file(prices, market)} (or {market} rows in a parquet or yfinance file of sources.prices)"
    )


NEWS_PATTERNS = ("*.csv", "*.parquet", "*.csv.gz")


def stage_news_table(settings: Settings, universe: pl.DataFrame, root: Path):
    """The configured news files staged (streamed, incrementally) under ``root``
    (:func:`.news.stage_news`); None when no news files are configured."""
    from .base import expand_paths
    from .news import stage_news

    sp = source_paths(settings)
    if not sp.news:
        return None
    files = expand_paths(list(sp.news), NEWS_PATTERNS)
    return stage_news(files, set(universe["ticker"].to_list()), sp.news_clock, root, calendar_end=sp.calendar_end, calendar_start=sp.calendar_start)


def rows_in_files(settings: Settings, table: str, cache: Path | None = None) -> int:
    """Rows of a raw table's source files counted without its loader: news and price rows, or
    filings (distinct accession numbers across the index and text sources, which the loader
    merges). ``cache``: a JSON file of earlier news/price counts, reused for files whose size,
    modification time and first MiB are unchanged."""
    from .rowcount import filing_records, source_rows

    sp = source_paths(settings)
    if table == "news_raw":
        return source_rows(list(sp.news), NEWS_PATTERNS, cache) if sp.news else 0
    if table == "prices":
        return source_rows(list(sp.prices), ("*.csv", "*.parquet"), cache)
    if table == "filings_raw":
        return filing_records(list(sp.filings_index), list(sp.filings_text))
    raise KeyError(table)


def _empty(table: str) -> LoadResult:
    from ..core.storage.schemas import FILINGS_RAW, NEWS_RAW, PRICES
    from .base import empty_quarantine

    spec = {s.name: s for s in (NEWS_RAW, PRICES, FILINGS_RAW)}[table]
    df = pl.from_arrow(spec.schema.empty_table()).with_columns(pl.lit(None, dtype=pl.Date).alias("date"))
    return LoadResult(table, df, empty_quarantine(), 0)


def world_fingerprint(settings_dump: dict) -> str:
    return json.dumps(settings_dump, sort_keys=True, default=str)


def source_fingerprint(s: Settings) -> str:
    """Hash of (path, size, mtime) of every configured source file."""
    sp = source_paths(s)
    h = hashlib.sha256()
    for pattern in [sp.universe, *sp.news, *sp.prices, *sp.filings_index, *sp.filings_text]:
        paths = glob.glob(pattern, recursive=True) if glob.has_magic(pattern) else [pattern]
        for p in sorted(paths):
            for root, _, files in os.walk(p) if os.path.isdir(p) else [(os.path.dirname(p), None, [os.path.basename(p)])]:
                for f in sorted(files):
                    fp = os.path.join(root, f)
                    try:
                        st = os.stat(fp)
                    except FileNotFoundError:
                        continue
                    h.update(f"{fp}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()
