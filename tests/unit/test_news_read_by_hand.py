"""normalize_news (sources/news/read.py) on tiny frames worked out by hand: a parquet's tz-aware,
naive and date cells and a CSV's strings, each to its UTC nanoseconds, wall clock and naive flag
(docs/time.md, "`sources/news/`: design notes"). Expected times from ``datetime`` and ``zoneinfo``."""

import datetime as dt
from zoneinfo import ZoneInfo

import polars as pl

from finrag_dagster.sources.news import normalize_news
from finrag_dagster.sources.news.columns import ROW_INDEX

NY = ZoneInfo("America/New_York")
UTC = dt.timezone.utc
COLUMNS = [
    "ts_ns",
    "wall_day",
    "wall_sec",
    "naive",
    "minute_only",
    "Date",
    "has_time",
    "slug_title",
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
    "source_file",
    "source_row",
    "repaired",
]
TYPES = [pl.Int64, pl.Date, pl.Int32, pl.Boolean, pl.Boolean, pl.Utf8, pl.Boolean, pl.Boolean] + [pl.Utf8] * 11 + [pl.Int64, pl.Boolean]


def ns(when: dt.datetime) -> int:
    return int(when.timestamp()) * 10**9


def normalized(date: pl.Series, repaired=False, **cols) -> pl.DataFrame:
    n = date.len()
    data = {"Date": date, "Stock_symbol": pl.Series(["AAA"] * n, dtype=pl.Utf8), "Url": pl.Series([f"u{i}" for i in range(n)], dtype=pl.Utf8)}
    data |= cols
    df = pl.DataFrame(data).with_row_index(ROW_INDEX)
    return normalize_news(df, {c: c for c in data}, "f.parquet", repaired)


def test_a_tz_aware_cell_keeps_its_own_wall_clock():
    cells = [dt.datetime(2021, 3, 1, 14, 5, 7), dt.datetime(2021, 3, 1, 23, 30), dt.datetime(2021, 7, 1)]
    got = normalized(pl.Series(cells, dtype=pl.Datetime("us")).dt.replace_time_zone("America/New_York"))
    assert got.columns == COLUMNS and list(got.schema.values()) == TYPES
    assert got["ts_ns"].to_list() == [ns(c.replace(tzinfo=NY)) for c in cells]
    assert got["ts_ns"][1] == ns(dt.datetime(2021, 3, 2, 4, 30, tzinfo=UTC))
    assert got["wall_day"].to_list() == [dt.date(2021, 3, 1), dt.date(2021, 3, 1), dt.date(2021, 7, 1)]  # New York's day, not UTC's
    assert got["wall_sec"].to_list() == [14 * 3600 + 5 * 60 + 7, 23 * 3600 + 30 * 60, 0]
    assert got["naive"].to_list() == [False, False, False]
    assert got["minute_only"].to_list() == [False, False, False]  # a typed cell carries its seconds
    assert got["Date"].to_list() == ["2021-03-01 14:05:07-0500", "2021-03-01 23:30:00-0500", "2021-07-01 00:00:00-0400"]


def test_a_naive_cell_is_utc_and_naive():
    cells = [dt.datetime(2021, 3, 1, 14, 5, 7), dt.datetime(2021, 3, 1, 0, 0, 59)]
    got = normalized(pl.Series(cells, dtype=pl.Datetime("ms")))
    assert list(got.schema.values()) == TYPES
    assert got["ts_ns"].to_list() == [ns(c.replace(tzinfo=UTC)) for c in cells]
    assert got["wall_day"].to_list() == [dt.date(2021, 3, 1)] * 2
    assert got["wall_sec"].to_list() == [50707, 59]
    assert got["naive"].to_list() == [True, True]
    assert got["minute_only"].to_list() == [False, False]
    assert got["Date"].to_list() == ["2021-03-01 14:05:07+0000", "2021-03-01 00:00:59+0000"]


def test_a_date_cell_is_midnight_utc_with_no_time_of_day():
    got = normalized(pl.Series([dt.date(2021, 3, 1), dt.date(1999, 12, 31)], dtype=pl.Date))
    assert list(got.schema.values()) == TYPES
    assert got["ts_ns"].to_list() == [ns(dt.datetime(2021, 3, 1, tzinfo=UTC)), ns(dt.datetime(1999, 12, 31, tzinfo=UTC))]
    assert got["wall_day"].to_list() == [dt.date(2021, 3, 1), dt.date(1999, 12, 31)]
    assert got["wall_sec"].to_list() == [0, 0]
    assert got["naive"].to_list() == [False, False]
    assert got["minute_only"].to_list() == [False, False]  # a date has no time of day to be minute-precise
    assert got["Date"].to_list() == ["2021-03-01", "1999-12-31"]


def test_string_cells_and_the_text_columns():
    got = normalized(
        pl.Series(["2021-03-01 14:05:07-05:00", None, "junk"], dtype=pl.Utf8),
        Article_title=pl.Series(["  T  ", None, ""], dtype=pl.Utf8),
        date_has_time=pl.Series([True, False, None], dtype=pl.Boolean),
        title_from_url_slug=pl.Series([True, None, False], dtype=pl.Boolean),
    )
    assert got.columns == COLUMNS and list(got.schema.values()) == TYPES
    assert got["ts_ns"].to_list() == [ns(dt.datetime(2021, 3, 1, 14, 5, 7, tzinfo=NY)), None, None]
    assert got["wall_sec"].to_list() == [50707, None, None]
    assert got["Date"].to_list() == ["2021-03-01 14:05:07-05:00", "", "junk"]
    assert got["Article_title"].to_list() == ["T", "", ""]
    assert got["Author"].to_list() == ["", "", ""]  # a column the file does not have
    assert got["has_time"].to_list() == [True, False, None]
    assert got["slug_title"].to_list() == [True, False, False]
    assert got["source_file"].to_list() == ["f.parquet"] * 3 and got["source_row"].to_list() == [0, 1, 2]


def test_without_the_flag_columns_has_time_is_unknown_and_no_title_is_a_slug():
    got = normalized(pl.Series(["2021-03-01"], dtype=pl.Utf8))
    assert got["has_time"].to_list() == [None] and got.schema["has_time"] == pl.Boolean
    assert got["slug_title"].to_list() == [False]


def test_no_rows_keep_their_types():
    got = normalized(pl.Series([], dtype=pl.Utf8))
    assert got.height == 0 and got.columns == COLUMNS and list(got.schema.values()) == TYPES


def test_repaired_rows_are_those_with_a_replacement_character():
    date = pl.Series(["2021-03-01"] * 3, dtype=pl.Utf8)
    titles = pl.Series(["caf\ufffd", "plain", "a.b"], dtype=pl.Utf8)
    publishers = pl.Series(["P", "P\ufffd", "P"], dtype=pl.Utf8)
    assert normalized(date, True, Article_title=titles, Publisher=publishers)["repaired"].to_list() == [True, True, False]
    assert normalized(date, False, Article_title=titles, Publisher=publishers)["repaired"].to_list() == [False, False, False]
