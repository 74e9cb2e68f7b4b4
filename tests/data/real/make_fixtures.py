"""Rebuild the real-data fixtures in this folder from the real-data development sample.

Usage, from the repository root (the sample is ``shared/data/real`` beside the repository):

    python tests/data/real/make_fixtures.py ../shared/data/real

Every rule below is written out in PROVENANCE.md. Files are either copied byte for byte or cut by
a fixed rule (rows kept in the sample's own order, lines kept byte for byte), so the same sample
gives the same files. Tests never run this and never need the sample.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent

# copied byte for byte
COPIED = (
    "universe/tickers.csv",
    "raw/fnspid_news/tech_2021_batch_01.csv",
    "raw/sec_submissions/CIK0000320193.json",
    "filings/filings_index.parquet",
    "filings/filings_text.parquet",
)
NEWS_FIRST_PER_TICKER = 50  # the earliest rows of each ticker, by (Date, Url)
NEWS_TIMED_BEFORE = dt.datetime(2024, 1, 30, tzinfo=dt.timezone.utc)  # AAPL rows with a time of day before this
PRICES_FROM, PRICES_TO = dt.datetime(2023, 3, 1), dt.datetime(2023, 5, 31)  # every ticker's bars, both ends included
AAPL_CSV_FROM, AAPL_CSV_TO = "1999-11-01", "2000-12-29"  # FNSPID aapl.csv lines, by their Date field
NVDA_CSV_FROM, NVDA_CSV_TO = "2020-01-02", "2020-03-31"  # yfinance NVDA lines, by their Date field


def news_rows(src: Path) -> pl.DataFrame:
    """The sample's news rows that the loader tests and the LLM reader test need, in file order."""
    df = pl.read_parquet(src / "news" / "fnspid_news.parquet").with_row_index("_i")
    raw = pl.read_csv(src / "raw" / "fnspid_news" / "tech_2021_batch_01.csv", columns=["Stock_symbol", "Url"])
    first = df.sort("Date", "Url", "_i").group_by("Stock_symbol", maintain_order=True).head(NEWS_FIRST_PER_TICKER)
    shared = df.group_by("Url").agg(pl.col("Stock_symbol").n_unique().alias("tickers"), pl.len().alias("rows"))
    shared = shared.filter((pl.col("tickers") > 1) | (pl.col("rows") > 1))
    keep = (
        pl.col("_i").is_in(first["_i"].implode())
        # the rows of the raw CSV (all INTC), so that loading both files finds them as duplicates
        | pl.struct("Stock_symbol", "Url").is_in(raw.select(pl.struct("Stock_symbol", "Url")).to_series().implode())
        # URLs under several tickers, or listed twice under one
        | pl.col("Url").is_in(shared["Url"].implode())
        # the scraper's rows with a time of day, up to and including 29 Jan 2024
        | (pl.col("date_has_time") & (pl.col("Date") < NEWS_TIMED_BEFORE))
    )
    return df.filter(keep).drop("_i")


def price_rows(src: Path) -> pl.DataFrame:
    df = pl.read_parquet(src / "prices" / "prices.parquet")
    return df.filter(pl.col("date").is_between(PRICES_FROM, PRICES_TO))


def csv_lines(path: Path, header_lines: int, lo: str, hi: str) -> bytes:
    """The header lines and the data lines with lo <= Date <= hi, byte for byte."""
    lines = path.read_bytes().splitlines(keepends=True)
    return b"".join(lines[:header_lines] + [ln for ln in lines[header_lines:] if lo <= ln[:10].decode() <= hi])


def write_parquet(df: pl.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    df.write_parquet(path, compression="zstd", compression_level=9, statistics=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sample", type=Path, help="the real-data sample folder (shared/data/real)")
    ap.add_argument("--out", type=Path, default=HERE, help="where to write (default: this folder)")
    a = ap.parse_args()
    src, out = a.sample.resolve(), a.out.resolve()
    if not (src / "PROVENANCE.md").is_file():
        raise SystemExit(f"{src}: not the real-data sample (no PROVENANCE.md)")
    for rel in COPIED:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, out / rel)
    edgar = src / "raw" / "sec-edgar-filings"
    for f in sorted(edgar.rglob("full-submission.txt")):  # the 12 header files, each 1,000 bytes
        dst = out / "raw" / "sec-edgar-filings" / f.relative_to(edgar)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dst)
    write_parquet(news_rows(src), out / "news" / "fnspid_news.parquet")
    write_parquet(price_rows(src), out / "prices" / "prices.parquet")
    for rel, head, lo, hi in (
        ("raw/fnspid_prices/aapl.csv", 1, AAPL_CSV_FROM, AAPL_CSV_TO),
        ("raw/yfinance/NVDA_historical_data.csv", 2, NVDA_CSV_FROM, NVDA_CSV_TO),
    ):
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(csv_lines(src / rel, head, lo, hi))


if __name__ == "__main__":
    main()
