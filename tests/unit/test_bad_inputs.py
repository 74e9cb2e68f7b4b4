"""Inputs that lie: every bad-input class ends quarantined with a reason, flagged, or as a SourceError
naming the file (and line). Nothing is repaired or dropped silently.

One table (``CASES``) drives the test. To add a source, register its loader in ``LOADERS`` and add
rows; fixtures live in ``tests/data/bad/`` (see its PROVENANCE.md). Every case that loads also passes
an independent row count: data rows counted straight from the files (``csv`` module / parquet
metadata) must equal ``rows_in`` and ``accepted + quarantined``.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.labels import compute_labels
from finrag_dagster.core.settings import LabelSettings
from finrag_dagster.sources import edgar, news, prices
from finrag_dagster.sources.base import FLAG_COLUMNS, LoadResult, SourceError
from finrag_dagster.sources.edgar import load_filings
from finrag_dagster.sources.news import load_news
from finrag_dagster.sources.prices import load_prices

BAD = Path(__file__).resolve().parents[1] / "data" / "bad"
UNIVERSE = {"AAPL", "AMD", "GOOG", "INTC", "META", "NVDA", "QQQ"}
CIKS = pl.DataFrame({"ticker": ["AAPL"], "cik": [320193]})

# loader name -> function of the fixture paths (fixed universe, default settings)
LOADERS: dict[str, Callable[[list[Path]], LoadResult]] = {
    "prices": lambda paths: load_prices(paths, UNIVERSE),
    "news": lambda paths: load_news(paths, UNIVERSE, calendar_end=dt.date(2023, 12, 29)),
    "filings": lambda paths: load_filings(paths, paths, CIKS),
    "news_trusted": lambda paths: load_news(paths, UNIVERSE, clock=news.NewsClock(dates_only=False), calendar_end=dt.date(2023, 12, 29)),
    "news_from_2022": lambda paths: load_news(paths, UNIVERSE, calendar_start=dt.date(2022, 1, 3), calendar_end=dt.date(2023, 12, 29)),
}


@dataclass(frozen=True)
class Case:
    id: str
    loader: str  # a key of LOADERS
    files: tuple[str, ...]  # relative to tests/data/bad
    quarantined: tuple[tuple[str, int, str], ...] = ()  # exactly these (source_file, source_row, reason)
    flagged: tuple[tuple[str, str, str], ...] = ()  # exactly these (ticker, date, flag)
    kept: tuple[tuple[str, str], ...] = ()  # these (ticker, date) are accepted
    detail: tuple[str, ...] = ()  # each appears in some flag's detail
    error: tuple[str, ...] = ()  # a SourceError whose message contains all of these
    header_lines: int = 1  # header lines in each CSV file, for the independent count


def count_data_rows(path: Path, header_lines: int) -> int:
    """Data rows of a file without the loader: parquet metadata, CSV records minus the header lines,
    a submissions JSON's accessions, one filing per ``full-submission.txt`` (a folder: its filings)."""
    if path.is_dir():
        return sum(1 for _ in path.rglob("full-submission.txt"))
    if path.suffix == ".json":
        return len(json.loads(path.read_text())["filings"]["recent"]["accessionNumber"])
    if path.suffix == ".parquet":
        return pq.ParquetFile(path).metadata.num_rows
    with path.open(newline="", encoding="utf-8-sig", errors="replace") as fh:
        return sum(1 for _ in csv.reader(fh)) - header_lines


def assert_rows_balance(res: LoadResult, paths: list[Path], header_lines: int) -> None:
    n = sum(count_data_rows(p, header_lines) for p in paths)
    assert n == res.rows_in, f"independent count {n} != rows_in {res.rows_in}: the loader lost or invented rows"
    assert res.rows_in == res.accepted.height + res.quarantine.height


P = "prices/"
CLOSE = prices.R_BAD_CLOSE
GAP = prices.F_MISSING_SESSION
CASES = [
    # (a) close <= 0 or NaN while adj_close is valid: quarantined, and the hole it leaves is flagged
    Case(
        "price_close_nonpositive_or_missing",
        "prices",
        (P + "close_bad/aapl.csv",),
        quarantined=(("aapl.csv", 2, CLOSE), ("aapl.csv", 5, CLOSE), ("aapl.csv", 7, CLOSE)),
        flagged=(("AAPL", "2021-01-06", GAP), ("AAPL", "2021-01-11", GAP), ("AAPL", "2021-01-13", GAP)),
        detail=("aapl.csv row 2 for this date was quarantined: " + CLOSE,),
    ),
    Case(
        "price_close_nan_parquet",
        "prices",
        (P + "close_nan_parquet/prices.parquet",),
        quarantined=(("prices.parquet", 2, CLOSE),),
        flagged=(("AMD", "2021-03-03", GAP),),
        kept=(("META", "2021-03-03"), ("AMD", "2021-03-04")),
    ),  # META's source gives no close at all
    # (b) a bar that contradicts itself
    Case(
        "price_high_below_low_and_close_above_high",
        "prices",
        (P + "ohlc_range/aapl.csv", P + "ohlc_range/qqq.csv"),
        quarantined=(("aapl.csv", 1, prices.R_HIGH_LOW), ("aapl.csv", 3, prices.R_OUTSIDE_RANGE)),
        flagged=(("AAPL", "2021-02-02", GAP), ("AAPL", "2021-02-04", GAP)),
        kept=(("QQQ", "2019-07-19"),),
    ),  # real: open one cent above high, inside the tolerance
    Case(
        "price_high_below_low_yfinance",
        "prices",
        (P + "yfinance_high_low/NVDA_historical_data.csv",),
        quarantined=(("NVDA_historical_data.csv", 2, prices.R_HIGH_LOW),),
        flagged=(("NVDA", "2021-06-03", GAP),),
        header_lines=2,
    ),
    # (c) a daily adjusted move beyond max_abs_move: flagged, kept
    Case(
        "price_large_move_real",
        "prices",
        (P + "large_move_real/aapl.csv",),
        flagged=(("AAPL", "2000-09-29", prices.F_LARGE_MOVE),),
        kept=(("AAPL", "2000-09-29"),),
        detail=("-51.9%",),
    ),
    Case(
        "price_large_move_split_error",
        "prices",
        (P + "large_move_split_error/goog.csv",),
        flagged=(("GOOG", "2020-07-06", prices.F_LARGE_MOVE),),
        kept=(("GOOG", "2020-07-06"),),
        detail=("-94.9%",),
    ),
    # (d) a session missing between two bars: flagged with the labels it makes missing_price
    Case(
        "price_missing_session",
        "prices",
        (P + "missing_session/aapl.csv", P + "missing_session/qqq.csv"),
        flagged=(("AAPL", "2021-03-15", GAP),),
        detail=(("missing_price: AAPL on decision days 2021-03-08 (5D), 2021-03-10 (3D), 2021-03-12 (1D), 2021-03-15 (1D 3D 5D)"),),
    ),
    # cells that are not numbers
    Case(
        "price_unparseable_number",
        "prices",
        (P + "bad_number/aapl.csv",),
        quarantined=(("aapl.csv", 1, prices.R_BAD_NUMBER + ": close='#N/A'"), ("aapl.csv", 3, prices.R_BAD_NUMBER + ": volume='1O9578200'")),
        flagged=(("AAPL", "2021-01-05", GAP), ("AAPL", "2021-01-07", GAP)),
    ),
    # values no market prints: an infinite close, a negative low or volume, a thousands separator
    Case(
        "price_date_with_junk_after_it",
        "prices",
        (P + "junk_date/aapl.csv",),
        quarantined=(("aapl.csv", 1, prices.R_BAD_DATE), ("aapl.csv", 2, prices.R_BAD_DATE)),
        flagged=(("AAPL", "2021-01-05", GAP), ("AAPL", "2021-01-06", GAP)),
        kept=(("AAPL", "2021-01-07"), ("AAPL", "2021-01-08")),  # an exporter's time part after the date is read
    ),
    Case(
        "price_impossible_values",
        "prices",
        (P + "impossible_values/aapl.csv",),
        quarantined=(
            ("aapl.csv", 1, prices.R_NON_FINITE),
            ("aapl.csv", 2, prices.R_NONPOSITIVE_OHL),
            ("aapl.csv", 3, prices.R_NEGATIVE_VOLUME),
            ("aapl.csv", 4, prices.R_BAD_NUMBER + ": volume='105,158,200'"),
        ),
        flagged=(("AAPL", "2021-01-05", GAP), ("AAPL", "2021-01-06", GAP), ("AAPL", "2021-01-07", GAP), ("AAPL", "2021-01-08", GAP)),
        kept=(("AAPL", "2021-01-04"), ("AAPL", "2021-01-11")),
    ),
    # a blank line is a record without a date: quarantined, so rows stay one-to-one with records
    Case(
        "price_blank_line", "prices", (P + "blank_line/aapl.csv",), quarantined=(("aapl.csv", 2, prices.R_BAD_DATE),), kept=(("AAPL", "2021-01-06"),)
    ),
    # (e) files that cannot be parsed: an error naming the file and line
    Case(
        "price_unterminated_quote",
        "prices",
        (P + "unterminated_quote/aapl.csv",),
        error=("unterminated_quote/aapl.csv", "line 4", "unterminated quote"),
    ),
    Case("price_ragged_row", "prices", (P + "ragged_row/aapl.csv",), error=("ragged_row/aapl.csv", "line 5", "ragged row")),
    Case("price_corrupt_parquet", "prices", (P + "corrupt_parquet/prices.parquet",), error=("corrupt_parquet/prices.parquet", "cannot read parquet")),
    # news: decided after the calendar's end (accepted silently before, into no partition)
    Case("news_after_calendar_end", "news", ("news/late.csv",), quarantined=(("late.csv", 1, news.R_AFTER_END),), kept=(("INTC", "2022-01-03"),)),
    # news: bytes that are not UTF-8 are replaced, and the rows that were repaired are flagged
    Case("news_not_utf8", "news", ("news/latin1.csv",), flagged=(("INTC", "2022-01-03", news.F_REPAIRED),), kept=(("INTC", "2022-01-03"),)),
    Case(
        "news_unterminated_quote", "news", ("news/unterminated_quote.csv",), error=("unterminated_quote.csv", "line 7")
    ),  # where the record with the open quote starts
    # news: a record with fewer or more fields than the header is quarantined, never read shifted
    Case(
        "news_ragged_rows",
        "news",
        ("news/ragged.csv",),
        quarantined=(
            ("ragged.csv", 1, news.R_RAGGED + ": 3 fields where the header has 11"),
            ("ragged.csv", 2, news.R_RAGGED + ": 12 fields where the header has 11"),
        ),
        kept=(("INTC", "2022-01-03"),),
    ),
    Case(
        "news_date_with_junk", "news", ("news/junk_date.csv",), quarantined=(("junk_date.csv", 1, news.R_BAD_DATE),), kept=(("INTC", "2022-01-03"),)
    ),
    # a trusted clock's stamp without an offset: 14:05 UTC would decide it on 2021-12-31; read as a date
    Case(
        "news_naive_time_in_trusted_file",
        "news_trusted",
        ("news/naive_trusted.csv",),
        flagged=(("INTC", "2022-01-03", news.F_NAIVE_TIME),),
        kept=(("INTC", "2022-01-03"),),
        detail=("'2021-12-31 14:05:00' has a time of day but no UTC offset",),
    ),
    # no title: the URL's slug becomes the title, and a flag says so (never a silent repair)
    Case(
        "news_title_from_url",
        "news",
        ("news/no_title.csv",),
        flagged=(("INTC", "2022-01-03", news.F_TITLE_FROM_URL),),
        kept=(("INTC", "2022-01-03"),),
        detail=("the title 'september 2022 options now available for intel intc' was read from the Url",),
    ),
    Case(
        "news_before_calendar_start",
        "news_from_2022",
        ("news/early.csv",),
        quarantined=(("early.csv", 1, news.R_BEFORE_START),),
        kept=(("INTC", "2022-01-03"),),
    ),
    Case("news_gzip_named_csv", "news", ("news/gzip_named.csv",), error=("gzip_named.csv", "gzip-compressed", "rename it")),
    # prices: a split basis that changes inside the file (adj_close/close +45%): flagged, kept
    Case(
        "price_basis_jump",
        "prices",
        (P + "basis_jump/aapl.csv",),
        flagged=(("AAPL", "2021-01-11", prices.F_BASIS_JUMP),),
        kept=(("AAPL", "2021-01-11"),),
        detail=("+45.0%",),
    ),
    Case("price_header_only", "prices", (P + "header_only/aapl.csv",), error=("aapl.csv", "a header and no bars", "AAPL")),
    Case("price_no_line_breaks", "prices", (P + "no_line_breaks/aapl.csv",), error=("aapl.csv", "a header and no bars")),
    Case("price_gzip_named_csv", "prices", (P + "gzip_named_csv/aapl.csv",), error=("aapl.csv", "gzip-compressed", "rename it to aapl.csv.gz")),
    # filings: arrays that do not line up are never zipped; one corrupt filing does not stop the others
    Case(
        "filings_unequal_arrays",
        "filings",
        ("edgar/short_arrays/CIK0000320193.json",),
        quarantined=tuple(("CIK0000320193.json", i, f"{edgar.R_UNEQUAL_ARRAYS} (accessionNumber 12, acceptanceDateTime 11)") for i in range(12)),
    ),
    Case(
        "filings_without_the_form_array",
        "filings",
        ("edgar/missing_form/CIK0000320193.json",),
        quarantined=tuple(("CIK0000320193.json", i, f"{edgar.R_MISSING_ARRAYS}: form") for i in range(12)),
    ),
    # an acceptance a month before its filing date would decide the filing a month early; days after it is as wrong
    Case(
        "filings_acceptance_vs_filing_date",
        "filings",
        ("edgar/acceptance_vs_filed/CIK0000320193.json",),
        quarantined=(
            (
                "CIK0000320193.json",
                1,
                f"{edgar.R_ACCEPTANCE_VS_FILED}: accepted 2024-10-02 (New York), 29 days before its filing date 2024-10-31 in "
                "CIK0000320193.json (allowed: the filing date or up to 4 days before)",
            ),
            (
                "CIK0000320193.json",
                2,
                f"{edgar.R_ACCEPTANCE_VS_FILED}: accepted 2024-08-05 (New York), 3 days after its filing date 2024-08-02 in "
                "CIK0000320193.json (allowed: the filing date or up to 4 days before)",
            ),
            ("CIK0000320193.json", 4, edgar.R_FORM),
            ("CIK0000320193.json", 6, edgar.R_FORM),
        ),
        kept=(("AAPL", "2024-11-01"), ("AAPL", "2024-05-03")),
    ),
    Case(
        "filings_corrupt_submission",
        "filings",
        ("edgar/sec-edgar-filings",),
        quarantined=(
            ("0000320193-23-000077/full-submission.txt", 0, f"{edgar.R_CORRUPT}: a binary or corrupt file (NUL bytes), not an EDGAR SGML submission"),
        ),
        kept=(("AAPL", "2023-02-03"), ("AAPL", "2023-05-05")),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input(case: Case):
    paths = [BAD / f for f in case.files]
    load = LOADERS[case.loader]
    if case.error:
        with pytest.raises(SourceError) as err:
            load(paths)
        for part in case.error:
            assert part in str(err.value)
        return
    res = load(paths)
    assert_rows_balance(res, paths, case.header_lines)
    got_q = set(res.quarantine.select("source_file", "source_row", "reason").iter_rows())
    assert got_q == set(case.quarantined)
    assert res.flags.schema == pl.Schema(FLAG_COLUMNS)
    got_f = {(t, d.isoformat(), f) for t, d, f in res.flags.select("ticker", "date", "flag").iter_rows()}
    assert got_f == set(case.flagged)
    acc = {(t, d.isoformat()) for t, d in res.accepted.select("ticker", "date").iter_rows()}
    assert set(case.kept) <= acc
    for part in case.detail:
        assert any(part in d for d in res.flags["detail"]), part


def test_row_balance_catches_a_silent_drop(monkeypatch):
    paths = [BAD / P / "close_bad" / "aapl.csv"]
    assert_rows_balance(LOADERS["prices"](paths), paths, 1)
    read = prices.read_price_file
    monkeypatch.setattr(prices, "read_price_file", lambda p: read(p).slice(1))  # a loader that loses a row
    res = LOADERS["prices"](paths)
    assert res.rows_in == res.accepted.height + res.quarantine.height  # its own invariant still holds
    with pytest.raises(AssertionError, match="independent count 10 != rows_in 9"):
        assert_rows_balance(res, paths, 1)


def test_missing_session_makes_exactly_the_flagged_labels_missing_price():
    """The flag's list of decision days is what core.labels does with the gap (short windows)."""
    res = load_prices(BAD / P / "missing_session", UNIVERSE)
    (flag,) = res.flags.filter(pl.col("flag") == prices.F_MISSING_SESSION).iter_rows(named=True)
    listed = flag["detail"].split("decision days ", 1)[1]
    claimed = {(d, h) for d, hs in re.findall(r"(\d{4}-\d\d-\d\d) \(([^)]*)\)", listed) for h in hs.split()}
    assert len(claimed) == 6
    cal = nyse()
    days = [cal.offset(flag["date"], i).isoformat() for i in range(-7, 2)]
    lab = compute_labels(res.accepted.select("ticker", "date", "adj_close"), days, cal, "QQQ", ["AAPL"], LabelSettings(window=20, gap=2, min_obs=10))
    status = {(d.isoformat(), h): s for d, h, s in lab.select("date", "horizon", "status").iter_rows()}
    assert {k for k, s in status.items() if s == "missing_price"} == claimed
    assert {s for k, s in status.items() if k not in claimed} == {"ok"}


def test_a_news_record_over_the_size_limit_is_quarantined_without_being_read(monkeypatch, tmp_path):
    """Row 1's ~5 KB article is over a 4 KiB limit: quarantined with its size, the rows around it
    read as usual; the reader never sees its text (the staged copy holds an empty record there)."""
    from finrag_dagster.sources import csvcheck

    monkeypatch.setattr(csvcheck, "MAX_NEWS_RECORD_BYTES", 4096)
    seen: list[str] = []
    source = news.segment.news_source
    monkeypatch.setattr(news.segment, "news_source", lambda p: seen.append(p.read_text(encoding="utf-8")) or source(p))  # the name _open_news calls
    path = BAD / "news" / "long_record.csv"
    res = load_news([path], UNIVERSE, calendar_end=dt.date(2023, 12, 29))
    assert_rows_balance(res, [path], 1)
    ((row, reason),) = res.quarantine.select("source_row", "reason").iter_rows()
    assert row == 1 and reason.startswith(news.R_OVERSIZED + ": ") and reason.endswith("bytes (limit 4,096)")
    assert 4096 < int(reason.split(": ")[1].split(" ")[0].replace(",", "")) < path.stat().st_size
    assert sorted(res.accepted["source_row"].to_list()) == [0, 2]
    assert seen and all("-long" not in text for text in seen)  # the long record's bytes never reached the reader


def test_scan_records_counts_fields_and_sizes_across_chunks(monkeypatch, tmp_path):
    """Quoted commas and newlines stay inside their field, also when a record spans chunks."""
    from finrag_dagster.sources import csvcheck

    monkeypatch.setattr(csvcheck, "SCAN_CHUNK", 7)
    f = tmp_path / "x.csv"
    f.write_bytes(b'a,b,c\r\n1,"x,\ny",3\r\n\r\n4,5\n' + b"6," + b"z" * 40 + b",8\n9,9,9")
    rec = csvcheck.scan_records(f, 30)
    assert (rec.header_fields, rec.count) == (3, 6)
    assert rec.ragged == {3: 2}  # the blank record (2) is not ragged
    assert rec.oversized == {4: (25, 45)}  # 7 + 12 + 2 + 4 bytes before it; "6," + 40 + ",8\n"
    out = tmp_path / "y.csv"
    csvcheck.blank_records(f, rec, out)
    assert out.read_bytes() == b'a,b,c\r\n1,"x,\ny",3\r\n\r\n4,5\n,,\n9,9,9'


def test_a_file_without_line_breaks_is_an_error_before_it_is_read(monkeypatch):
    monkeypatch.setattr(prices, "MAX_PRICE_RECORD_BYTES", 1024)
    with pytest.raises(SourceError, match="no line break within the first 1,024 bytes"):
        load_prices([BAD / P / "no_line_breaks" / "aapl.csv"], UNIVERSE)
