"""Vendor CSV formats the loaders once misread: each ends in an error naming its cause, or loads
with every record accounted for, and the ``rows_reconcile`` count (``rowcount.file_rows``) reads the
file's records as Python's ``csv`` module does, whatever its line ends or encoding.

The files are the real FNSPID nasdaq.com rows of ``tests/data/news_clock/fnspid_nasdaq.csv`` and the
real QQQ bars of ``tests/data/bad/prices/ohlc_range/qqq.csv``, rewritten here as each export would.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from finrag_dagster.sources import rowcount
from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.news import load_news
from finrag_dagster.sources.prices import load_prices
from finrag_dagster.sources.rowcount import file_rows, source_rows
from finrag_dagster.sources.universe import load_universe

DATA = Path(__file__).resolve().parents[1] / "data"
NEWS = DATA / "news_clock" / "fnspid_nasdaq.csv"
QQQ = DATA / "bad" / "prices" / "ohlc_range" / "qqq.csv"
UNIVERSE = {"INTC", "QQQ"}


def _records(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def news_records() -> list[list[str]]:
    """The header and four rows: the two real rows, and each again under another URL."""
    head, *rows = _records(NEWS)
    more = [[c + "-2" if i == 3 else c for i, c in enumerate(r)] for r in rows]
    return [head, *rows, *more]


def write(path: Path, records: list[list[str]], line_end: str = "\n", encoding: str = "utf-8", delimiter: str = ",") -> Path:
    buf = io.StringIO()
    csv.writer(buf, lineterminator=line_end, delimiter=delimiter).writerows(records)
    path.write_bytes(buf.getvalue().encode(encoding))
    return path


def news(paths) -> object:
    return load_news(paths, UNIVERSE, calendar_end=dt.date(2023, 12, 29))


def test_the_real_news_rows_have_newlines_inside_quoted_articles():
    """The premise of the CR cases below: the articles hold newlines, so a CR line end and a quoted
    newline are different bytes a reader must tell apart."""
    rows = news_records()[1:]
    assert sum("\n" in r[6] for r in rows) == 2 and len(rows) == 4
    assert news([NEWS]).rows_in == 2


# -------------------------------------------------------------------------------- 1. CR line ends
@pytest.mark.parametrize("inner_newlines", [True, False])
def test_a_news_csv_with_cr_line_ends_is_an_error_that_says_so(tmp_path, inner_newlines):
    records = news_records()
    if not inner_newlines:
        records = [[c.replace("\n", " ") for c in r] for r in records]
    f = write(tmp_path / "news.csv", records, line_end="\r")
    with pytest.raises(SourceError, match=r"news\.csv: line 1: CR line ends \(classic Mac.*re-save the file with LF or CRLF line ends") as err:
        news([f])
    assert len(str(err.value)) < 300
    assert file_rows(f) == 4  # the independent count reads every record (it counted 0 or 1 before)


def test_the_same_rows_with_lf_or_crlf_line_ends_load_whole(tmp_path):
    want = None
    for name, end in (("lf.csv", "\n"), ("crlf.csv", "\r\n")):
        f = write(tmp_path / name, news_records(), line_end=end)
        res = news([f])
        assert res.rows_in == file_rows(f) == 4 and res.accepted.height == 4
        got = res.accepted.drop("source_file")
        want = got if want is None else want
        assert got.equals(want)  # CRLF changes nothing: the articles keep their own "\n"


# -------------------------------------------------------------------------------- 2. a column twice
def test_a_price_header_with_close_twice_is_an_error_naming_it(tmp_path):
    """An export that renamed 'Adj Close' to 'Close': which one is the close? Both were read from
    the second before, and bars were quarantined or kept with the adjusted value as close."""
    head, *rows = _records(QQQ)
    assert head[5] == "Adj Close"
    head[5] = "Close"
    f = write(tmp_path / "qqq.csv", [head, *rows])
    with pytest.raises(SourceError, match=r"qqq\.csv: duplicate column 'Close' \(columns 5 and 6\)"):
        load_prices([f], UNIVERSE)


@pytest.mark.parametrize("column", ["Url", "Article"])
def test_a_news_header_with_a_column_twice_is_an_error_naming_it(tmp_path, column):
    head, *rows = news_records()
    j = head.index(column)
    f = write(tmp_path / "news.csv", [r[: j + 1] + [r[j]] + r[j + 1 :] for r in [head, *rows]])
    with pytest.raises(SourceError, match=f"news.csv: duplicate column '{column}' \\(columns {j + 1} and {j + 2}\\)"):
        news([f])


def test_a_universe_or_price_parquet_with_a_column_twice_is_an_error(tmp_path):
    (tmp_path / "u").mkdir()
    u = write(tmp_path / "u" / "tickers.csv", [["ticker", "cik", "Ticker"], ["INTC", "50863", "AAPL"]])
    with pytest.raises(SourceError, match="duplicate column 'Ticker' \\(columns 1 and 3\\)"):
        load_universe(u)
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pl.read_csv(QQQ).rename(str.lower).rename({"adj close": "adj_close"}).with_columns(ticker=pl.lit("QQQ")).to_arrow()
    pq.write_table(pa.Table.from_arrays([*t.columns, t.column("close")], names=[*t.column_names, "Close"]), tmp_path / "p.parquet")
    with pytest.raises(SourceError, match="p.parquet: duplicate column 'Close'"):
        load_prices([tmp_path / "p.parquet"], UNIVERSE)


# -------------------------------------------------------------------------------- 3. another column order
def test_news_columns_in_another_order_load_and_reconcile(tmp_path):
    """Loaded right before, but the independent count took the first two rows for header rows (their
    first cell, a title, does not start with a digit) and ``rows_reconcile`` failed."""
    records = news_records()
    order = [1, 2, 0, *range(3, 11)]
    f = write(tmp_path / "news.csv", [[r[i] for i in order] for r in records])
    res = news([f])
    assert res.rows_in == res.accepted.height == file_rows(f) == 4
    same = news([write(tmp_path / "same.csv", records)])
    assert res.accepted.drop("source_file").equals(same.accepted.drop("source_file"))


# -------------------------------------------------------------------------------- 4. encodings, delimiters
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_news_and_prices_are_named_utf16(tmp_path, encoding):
    f = write(tmp_path / "news.csv", news_records(), encoding=encoding)
    with pytest.raises(SourceError, match="news.csv: the file is UTF-16 text .*re-save it as UTF-8"):
        news([f])
    p = write(tmp_path / "qqq.csv", _records(QQQ), encoding=encoding)
    with pytest.raises(SourceError, match="qqq.csv: the file is UTF-16 text .*re-save it as UTF-8"):
        load_prices([p], UNIVERSE)


def test_a_semicolon_price_file_with_decimal_commas_names_both(tmp_path):
    head, *rows = _records(QQQ)
    euro = [head] + [[c.replace(".", ",") for c in r] for r in rows]
    f = write(tmp_path / "qqq.csv", euro, delimiter=";")
    with pytest.raises(SourceError) as err:
        load_prices([f], UNIVERSE)
    msg = str(err.value)
    assert "the delimiter is ';', not ','" in msg and "decimal commas ('193,9100036621093')" in msg
    (tmp_path / "tab").mkdir()
    t = write(tmp_path / "tab" / "qqq.csv", _records(QQQ), delimiter="\t")
    with pytest.raises(SourceError, match="the delimiter is a tab, not ','"):
        load_prices([t], UNIVERSE)


def test_a_utf8_bom_and_an_index_column_load_the_same_rows(tmp_path):
    records = news_records()
    plain = news([write(tmp_path / "plain.csv", records)])
    bom = write(tmp_path / "bom.csv", records, encoding="utf-8-sig")
    indexed = write(tmp_path / "indexed.csv", [["", *records[0]]] + [[str(i), *r] for i, r in enumerate(records[1:])])
    for f in (bom, indexed):
        res = news([f])
        assert res.rows_in == file_rows(f) == 4
        assert res.accepted.drop("source_file").equals(plain.accepted.drop("source_file"))


# -------------------------------------------------------------------------------- 5. the independent count
def test_the_count_reads_records_as_the_csv_module_does(tmp_path):
    """CR, CRLF and LF line ends, UTF-8 with and without a BOM and UTF-16: the same four records."""
    for end in ("\n", "\r\n", "\r"):
        for enc in ("utf-8", "utf-8-sig", "utf-16"):
            f = write(tmp_path / "n.csv", news_records(), line_end=end, encoding=enc)
            assert file_rows(f) == 4, (end, enc)


def test_a_stale_count_of_an_earlier_counter_is_not_reused(tmp_path):
    f = write(tmp_path / "news.csv", news_records())
    cache = tmp_path / "rows.json"
    assert source_rows([f], ("*.csv",), cache) == 4
    entry = json.loads(cache.read_text())
    ((fp, n),) = entry.values()
    assert fp[0] == rowcount.COUNT_VERSION and n == 4
    cache.write_text(json.dumps({k: [fp[1:], 99] for k in entry}))  # the old fingerprint, without the version
    assert source_rows([f], ("*.csv",), cache) == 4


_TEXT = st.text(alphabet=st.sampled_from(list('ab ",\r\n')), max_size=60)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(cells=st.lists(st.lists(_TEXT, min_size=1, max_size=4), min_size=1, max_size=8), end=st.sampled_from(["\n", "\r\n", "\r"]))
def test_a_long_record_is_counted_as_the_csv_module_counts_it(cells, end):
    """Past ``LONG_TEXT`` characters a record is squeezed to its CSV structure: the count is the
    csv module's on the whole text, for quoted newlines, escaped quotes and commas alike."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator=end).writerows([["Date", "Stock_symbol"], *(["2021-03-01", *r] for r in cells)])
    text = buf.getvalue()
    whole = len(list(csv.reader(io.StringIO(text, newline="")))) - 1
    old = rowcount.LONG_TEXT
    rowcount.LONG_TEXT = 7  # every record of more than 7 characters squeezed, lines read in pieces of 7
    try:
        got = rowcount.csv_records(io.BufferedReader(io.BytesIO(text.encode())))
    finally:
        rowcount.LONG_TEXT = old
    assert got == whole


def test_the_news_asset_reconciles_a_file_whose_columns_are_in_another_order(tmp_path):
    """Through the ``news_raw`` asset: ``rows_reconcile`` passed the loader's rows against a count that
    took the first rows of such a file for header rows (a false alarm); now both count four."""
    from finrag_dagster.core.settings import Settings
    from finrag_dagster.pipeline import run_range
    from tests.instance import pooled_instance

    (tmp_path / "tickers.csv").write_text("ticker,Security\nINTC,Intel\nQQQ,QQQ\n")
    order = [1, 2, 0, *range(3, 11)]
    write(tmp_path / "news.csv", [[r[i] for i in order] for r in news_records()])
    s = Settings(
        lake_dir=tmp_path / "lake",
        sources={
            "kind": "files",
            "universe": str(tmp_path / "tickers.csv"),
            "news": [str(tmp_path / "news.csv")],
            "prices": [str(tmp_path / "none.csv")],
        },
        calendar={"start": dt.date(2021, 12, 1), "end": dt.date(2022, 1, 31), "decision_start": dt.date(2021, 12, 1)},
    )
    with pooled_instance() as inst:
        results = run_range(s, end=dt.date(2022, 1, 31), instance=inst, only=["universe", "news_raw"])
    (check,) = [c for r in results for c in r.get_asset_check_evaluations() if c.check_name == "rows_reconcile"]
    assert check.metadata["rows_in"].value == check.metadata["rows_in_files"].value == 4
    assert check.passed
