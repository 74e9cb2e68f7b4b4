"""The news clock (sources/news/clock.py) on tiny examples worked out by hand (docs/time.md, "News (FNSPID)").

Every expected time is computed here with ``datetime`` and ``zoneinfo`` from the rule as written in
the docs (a stamp stands for the end of its precision; a date is public at 23:59:59 New York that
day), never taken from the module's own output.
"""

import datetime as dt
from zoneinfo import ZoneInfo

import numpy as np
import polars as pl

from finrag_dagster.sources.news import NEVER, NewsClock, minute_stats, news_public_ns, normalize_news, parse_news_times
from finrag_dagster.sources.news.clock import _clock_parts, _wall_clock
from finrag_dagster.sources.news.columns import ROW_INDEX

NY = ZoneInfo("America/New_York")
UTC = dt.timezone.utc
TRUST_ALL = NewsClock(dates_only=False)
MIN64 = np.iinfo(np.int64).min


def ns(when: dt.datetime) -> int:
    """UTC nanoseconds of an aware datetime (exact: whole seconds only)."""
    return int(when.timestamp()) * 10**9


def ny(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0) -> int:
    return ns(dt.datetime(y, mo, d, h, mi, s, tzinfo=NY))


def utc(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0) -> int:
    return ns(dt.datetime(y, mo, d, h, mi, s, tzinfo=UTC))


def end_of_ny_day(y: int, mo: int, d: int) -> int:
    """A date-only stamp's public time: 23:59:59 New York that day."""
    return ny(y, mo, d, 23, 59, 59)


def rows(dates, publishers=None, file="f.csv", has_time=None) -> pl.DataFrame:
    """normalize_news rows of one file from its Date cells (strings) and publishers."""
    n = len(dates)
    data = {
        "Date": dates,
        "Article_title": ["t"] * n,
        "Stock_symbol": ["AAA"] * n,
        "Url": [f"u{i}" for i in range(n)],
        "Publisher": publishers if publishers is not None else ["P"] * n,
    }
    if has_time is not None:
        data["date_has_time"] = pl.Series(has_time, dtype=pl.Boolean)
    df = pl.DataFrame(data).with_row_index(ROW_INDEX)
    return normalize_news(df, {c: c for c in data}, file, False)


def public(frame, clock=NewsClock(), minute=None):
    pub, prec = news_public_ns(frame, clock, minute)
    return pub.tolist(), list(prec)


# --- parse_news_times -------------------------------------------------------------------------


def test_parse_suffixes_offsets_and_naive_stamps():
    got = parse_news_times(
        [
            "2020-06-05 06:30:54 UTC",
            "2020-06-05 06:30:54 GMT",
            "2020-06-05T06:30:54Z",
            "2020-06-05 06:30:54 utc",  # any case
            "  2020-06-05 06:30:54utc  ",  # blanks around, none before the suffix
            "2020-06-05 06:30:54",  # no offset: UTC
            "2020-06-05 02:30:54-04:00",
            "2020-06-05",
        ]
    )
    assert got.dtype == np.int64
    assert got.tolist() == [utc(2020, 6, 5, 6, 30, 54)] * 7 + [utc(2020, 6, 5)]


def test_parse_marks_what_is_no_stamp():
    got = parse_news_times([None, "", "   ", "junk", "UTC", "2021-02-30 10:00:00"])
    assert got.tolist() == [MIN64] * 6


def test_parse_returns_a_writable_array_of_its_own():
    got = parse_news_times(["2020-06-05 06:30:54 UTC"])
    got[0] = 1  # the reader may fill it in place
    assert got.tolist() == [1]


# --- _wall_clock ------------------------------------------------------------------------------


def test_wall_clock_is_the_stamp_as_written():
    stamps = [
        "2021-03-01 14:05:07-05:00",  # its own offset's wall clock, not UTC
        "2021-03-01T09:05+00:00",  # one-digit hour allowed, no seconds
        "2021-03-01 14:05:07",  # no offset: naive
        "2021-03-01 14:05:07.250",  # fractional seconds, still no offset
        "2021-03-01 14:05:07 UTC",
        "2021-03-01 14:05:07Z",
        "  2021-03-01 23:59:59",
        "2021-03-01",  # a date: midnight, not naive
        "2021-03-01 00:00:00",  # a time of day (midnight) without offset: naive
    ]
    days, secs, naive, no_sec = _wall_clock(stamps)
    assert days.dtype == pl.Date and secs.dtype == pl.Int32 and naive.dtype == pl.Boolean
    assert days.to_list() == [dt.date(2021, 3, 1)] * len(stamps)
    assert secs.to_list() == [14 * 3600 + 5 * 60 + 7, 9 * 3600 + 5 * 60, 50707, 50707, 50707, 50707, 86399, 0, 0]
    assert naive.to_list() == [False, False, True, True, False, False, True, False, True]
    assert no_sec.to_list() == [False, True, False, False, False, False, False, False, False]  # only 09:05 gives no seconds


def test_wall_clock_of_what_is_no_stamp():
    days, secs, naive, no_sec = _wall_clock([None, "", "junk", "2021-02-30 10:00", "10:00 2021-03-01"])
    assert days.to_list() == [None] * 5
    assert no_sec.to_list() == [False] * 5
    assert secs.to_list() == [None] * 5
    assert naive.to_list() == [False] * 5
    assert (days.dtype, secs.dtype, naive.dtype) == (pl.Date, pl.Int32, pl.Boolean)


def test_wall_clock_of_no_values_keeps_its_types():
    days, secs, naive, no_sec = _wall_clock([])
    assert (days.len(), secs.len(), naive.len(), no_sec.len()) == (0, 0, 0, 0)
    assert (days.dtype, secs.dtype, naive.dtype, no_sec.dtype) == (pl.Date, pl.Int32, pl.Boolean, pl.Boolean)


def test_wall_clock_after_a_bad_day_goes_on():
    """A row that fails leaves the next row's parts in their place."""
    days, secs, naive, no_sec = _wall_clock(["2021-02-30 10:00", "2021-03-02 10:00:00", "x", "2021-03-03 00:01"])
    assert days.to_list() == [None, dt.date(2021, 3, 2), None, dt.date(2021, 3, 3)]
    assert secs.to_list() == [None, 36000, None, 60]
    assert naive.to_list() == [False, True, False, True]
    assert no_sec.to_list() == [False, False, False, True]


# --- NewsClock --------------------------------------------------------------------------------


def test_trusted_publishers_are_exact_case_insensitive_and_stripped():
    c = NewsClock(trusted_publishers=(" Benzinga ", "", "  "))
    got = c.trusted(["benzinga", "BENZINGA ", "Benzinga Pro", "", None, "Reuters"], ["a.csv"] * 6)
    assert got.dtype == bool
    assert got.tolist() == [True, True, False, False, False, False]  # an empty name trusts no empty publisher


def test_trusted_files_are_shell_patterns():
    c = NewsClock(trusted_files=("aapl*.csv", "x?.parquet"))
    got = c.trusted(["P"] * 5, ["aapl_2024.csv", "msft.csv", "x1.parquet", "x12.parquet", "aapl.csv.gz"])
    assert got.tolist() == [True, False, True, False, False]


def test_either_trust_is_enough():
    c = NewsClock(trusted_publishers=("Wire",), trusted_files=("scraped.csv",))
    got = c.trusted(["Wire", "Other", "Other", "Wire"], ["a.csv", "scraped.csv", "a.csv", "scraped.csv"])
    assert got.tolist() == [True, True, False, True]


def test_default_trusts_no_clock_and_dates_only_false_every_clock():
    assert NewsClock().trusted(["Benzinga", ""], ["a.csv", "b.csv"]).tolist() == [False, False]
    every = TRUST_ALL.trusted(["Benzinga", ""], ["a.csv", "b.csv"])
    assert every.dtype == bool and every.tolist() == [True, True]
    assert TRUST_ALL.trusted([], []).tolist() == []
    none = NewsClock().trusted([], [])
    assert none.dtype == bool and none.shape == (0,)


def test_no_publisher_is_never_a_trusted_publisher():
    """Whatever name is trusted, a row without a publisher is not trusted by it."""
    for name in ("XXXX", "None", "nan"):
        assert NewsClock(trusted_publishers=(name,)).trusted(["", None, name], ["a.csv"] * 3).tolist() == [False, False, True]


def test_describe_sorts_what_is_trusted():
    c = NewsClock(trusted_publishers=("b", "a"), trusted_files=("z*.csv", "a*.csv"))
    assert c.describe() == {"dates_only": True, "trusted_publishers": ["a", "b"], "trusted_files": ["a*.csv", "z*.csv"]}
    assert TRUST_ALL.describe() == {"dates_only": False, "trusted_publishers": [], "trusted_files": []}


# --- news_public_ns ---------------------------------------------------------------------------


def test_by_default_a_stamp_is_public_at_the_end_of_its_written_day():
    """22:00 New York on 5 March is 03:00 UTC on the 6th: the day written (the 5th) ends at 23:59:59 New York."""
    f = rows(["2019-03-05 16:00:00", "2019-03-05 22:00:00-05:00", "2019-03-06 03:00:00 UTC", "2019-03-05"])
    pub, prec = public(f)
    assert prec == ["date"] * 4
    assert pub == [end_of_ny_day(2019, 3, 5), end_of_ny_day(2019, 3, 5), end_of_ny_day(2019, 3, 6), end_of_ny_day(2019, 3, 5)]
    assert pub[1] == utc(2019, 3, 6, 4, 59, 59)  # EST: UTC-5


def test_summer_date_ends_at_23_59_59_eastern_daylight_time():
    pub, _ = public(rows(["2019-07-05 10:00:00+00:00"]))
    assert pub == [utc(2019, 7, 6, 3, 59, 59)]  # EDT: UTC-4


def test_a_whole_minute_source_is_public_at_the_end_of_the_minute():
    """16:00 given to the minute is public at 16:00:59 New York (the next session's decision)."""
    f = rows(["2019-03-05 16:00:00-05:00", "2019-03-05 09:31:00-05:00"])
    pub, prec = public(f, TRUST_ALL)
    assert prec == ["minute", "minute"]
    assert pub == [ny(2019, 3, 5, 16, 0, 59), ny(2019, 3, 5, 9, 31, 59)]
    assert pub[0] == utc(2019, 3, 5, 21, 0, 59)


def test_one_stamp_with_seconds_makes_the_whole_source_second_precise():
    f = rows(["2019-03-05 16:00:00-05:00", "2019-03-05 15:00:07-05:00", "2019-03-05 15:00:30-05:00"])
    pub, prec = public(f, TRUST_ALL)
    assert prec == ["second"] * 3
    assert pub == [ny(2019, 3, 5, 16), ny(2019, 3, 5, 15, 0, 7), ny(2019, 3, 5, 15, 0, 30)]


def test_a_stamp_without_seconds_stands_for_its_minute_in_a_second_precise_source():
    """16:00-05:00 written without seconds could be 16:00:30, after the close: public at 16:00:59
    and decided on the next session, though its source writes seconds elsewhere."""
    f = rows(["2019-03-05 16:00-05:00", "2019-03-05 15:00:07-05:00", "2019-03-05 15:59:00-05:00"])
    pub, prec = public(f, TRUST_ALL)
    assert prec == ["minute", "second", "second"]
    assert pub == [ny(2019, 3, 5, 16, 0, 59), ny(2019, 3, 5, 15, 0, 7), ny(2019, 3, 5, 15, 59)]


def test_minute_precision_is_per_file_and_publisher():
    a = rows(["2019-03-05 16:00:00-05:00", "2019-03-05 16:00:00-05:00", "2019-03-05 15:00:07-05:00"], ["A", "B", "B"], "one.csv")
    b = rows(["2019-03-05 16:00:00-05:00"], ["B"], "two.csv")
    f = pl.concat([a, b])
    pub, prec = public(f, TRUST_ALL)
    assert prec == ["minute", "second", "second", "minute"]
    assert pub == [ny(2019, 3, 5, 16, 0, 59), ny(2019, 3, 5, 16), ny(2019, 3, 5, 15, 0, 7), ny(2019, 3, 5, 16, 0, 59)]


def test_minute_stats_count_trusted_timed_stamps_per_source():
    a = rows(
        ["2019-03-05 16:00:00-05:00", "2019-03-05 15:00:07-05:00", "2019-03-05 00:00:00-05:00", "junk", "2019-03-05 10:00:00"],
        ["B", "B", "B", "B", "B"],
        "one.csv",
    )
    b = rows(["2019-03-05 16:00:00-05:00", "2019-03-05 16:01:00-05:00"], ["A", "A"], "one.csv")
    c = rows(["2019-03-05 16:00:00-05:00"], ["B"], "0.csv")
    got = minute_stats(pl.concat([a, b, c]), TRUST_ALL)
    # midnight is a date, junk does not parse, a naive time of day is read as a date: none of them is timed
    assert got.to_dicts() == [
        {"f": "0.csv", "p": "B", "timed": 1, "on_minute": 1},
        {"f": "one.csv", "p": "A", "timed": 2, "on_minute": 2},
        {"f": "one.csv", "p": "B", "timed": 2, "on_minute": 1},
    ]
    assert got.schema == pl.Schema({"f": pl.Utf8, "p": pl.Utf8, "timed": pl.Int64, "on_minute": pl.Int64})
    untrusted = minute_stats(a, NewsClock())
    assert untrusted.to_dicts() == [{"f": "one.csv", "p": "B", "timed": 0, "on_minute": 0}]


def test_minute_stats_are_sorted_by_file_then_publisher():
    pubs = ["G", "C", "A", "H", "E", "B", "F", "D"]
    f = pl.concat([rows(["2019-03-05 16:00:00-05:00"] * 8, pubs, "b.csv"), rows(["2019-03-05 16:00:07-05:00"] * 8, pubs[::-1], "a.csv")])
    got = minute_stats(f, TRUST_ALL)
    assert got.select("f", "p").rows() == [(file, p) for file in ("a.csv", "b.csv") for p in "ABCDEFGH"]
    assert got["on_minute"].to_list() == [0] * 8 + [1] * 8


def test_minute_stats_of_no_rows():
    got = minute_stats(rows([]), TRUST_ALL)
    assert got.height == 0
    assert got.schema == pl.Schema({"f": pl.Utf8, "p": pl.Utf8, "timed": pl.Int64, "on_minute": pl.Int64})


def test_a_batch_takes_minute_precision_from_the_whole_file():
    """The batch holds only whole minutes, but the file it came from has a stamp with seconds."""
    whole = rows(["2019-03-05 16:00:00-05:00", "2019-03-05 15:00:07-05:00"])
    batch = whole.head(1)
    assert public(batch, TRUST_ALL) == ([ny(2019, 3, 5, 16, 0, 59)], ["minute"])
    assert public(batch, TRUST_ALL, minute_stats(whole, TRUST_ALL)) == ([ny(2019, 3, 5, 16)], ["second"])
    # a source the stats do not know is not minute-precise: its stamps stand for themselves
    other = minute_stats(rows(["2019-03-05 16:00:00-05:00"], file="other.csv"), TRUST_ALL)
    assert public(batch, TRUST_ALL, other) == ([ny(2019, 3, 5, 16)], ["second"])


def test_local_midnight_and_naive_times_are_dates_when_trusted():
    f = rows(["2019-03-05 00:00:00-05:00", "2019-03-05 14:05:00", "2019-03-05 00:00:00", "2019-03-05 14:05:00 UTC", "2019-03-05"])
    pub, prec = public(f, TRUST_ALL)
    assert prec == ["date", "date", "date", "minute", "date"]
    assert pub == [end_of_ny_day(2019, 3, 5)] * 3 + [utc(2019, 3, 5, 14, 5, 59), end_of_ny_day(2019, 3, 5)]
    # only the trusted time of day without an offset is naive (flagged); midnight is a date anyway
    assert _clock_parts(f, TRUST_ALL)["naive"].tolist() == [False, True, False, False, False]
    assert _clock_parts(f, NewsClock())["naive"].tolist() == [False] * 5


def test_date_has_time_false_makes_a_trusted_stamp_a_date():
    f = rows(["2019-03-05 16:00:07-05:00", "2019-03-05 16:00:07-05:00", "2019-03-05 16:00:07-05:00"], has_time=[False, True, None])
    pub, prec = public(f, TRUST_ALL)
    assert prec == ["date", "second", "second"]
    assert pub == [end_of_ny_day(2019, 3, 5), ny(2019, 3, 5, 16, 0, 7), ny(2019, 3, 5, 16, 0, 7)]
    assert _clock_parts(f, TRUST_ALL)["timed"].tolist() == [False, True, True]


def test_no_stamp_is_never_public():
    f = rows(["junk", "", "2019-03-05 16:00:07-05:00", "2021-02-30 10:00:00"])
    pub, prec = public(f, TRUST_ALL)
    assert pub == [NEVER, NEVER, ny(2019, 3, 5, 16, 0, 7), NEVER]
    assert NEVER == 2**63 - 1
    assert prec[2] == "second"
    parts = _clock_parts(f, TRUST_ALL)
    assert parts["valid"].tolist() == [False, False, True, False]
    assert parts["timed"].tolist() == [False, False, True, False]


def test_trusted_by_publisher_only():
    f = rows(["2019-03-05 16:00:07-05:00", "2019-03-05 16:00:07-05:00"], ["Wire", "Blog"])
    pub, prec = public(f, NewsClock(trusted_publishers=("wire",)))
    assert prec == ["second", "date"]
    assert pub == [ny(2019, 3, 5, 16, 0, 7), end_of_ny_day(2019, 3, 5)]


def test_a_day_missing_from_the_wall_clock_is_the_utc_day():
    """A frame whose wall-clock day is unknown (null) dates the stamp by its UTC day."""
    stamps = ["2019-03-06 03:00:00+00:00", "2019-03-05 12:00:00+00:00", "2019-03-05T23:59:59.999999999+00:00"]
    f = rows(stamps).with_columns(pl.lit(None, dtype=pl.Date).alias("wall_day"))
    pub, prec = public(f)
    assert prec == ["date", "date", "date"]
    # the last nanosecond of 5 March (UTC) is still 5 March
    assert pub == [end_of_ny_day(2019, 3, 6), end_of_ny_day(2019, 3, 5), end_of_ny_day(2019, 3, 5)]


def test_a_frame_without_the_naive_column_reads_no_stamp_as_naive():
    f = rows(["2019-03-05 14:05:00", "2019-03-05 14:05:07"]).drop("naive")
    pub, prec = public(f, TRUST_ALL)
    assert prec == ["second", "second"]
    assert pub == [utc(2019, 3, 5, 14, 5), utc(2019, 3, 5, 14, 5, 7)]
    assert _clock_parts(f, TRUST_ALL)["naive"].tolist() == [False, False]


def test_an_unknown_naive_is_read_as_not_naive():
    """A null ``naive`` (not known) is read as a frame without the column reads it: the time of day is used."""
    f = rows(["2019-03-05 14:05:00", "2019-03-05 14:05:07"]).with_columns(pl.lit(None, dtype=pl.Boolean).alias("naive"))
    pub, prec = public(f, TRUST_ALL)
    assert prec == ["second", "second"]
    assert pub == [utc(2019, 3, 5, 14, 5), utc(2019, 3, 5, 14, 5, 7)]
    assert _clock_parts(f, TRUST_ALL)["naive"].tolist() == [False, False]


def test_clock_parts_by_hand():
    f = rows(["2019-03-05 16:00:00-05:00", "2019-03-05 16:00:30-05:00", "2019-03-05 22:00:00-05:00", "junk"])
    c = _clock_parts(f, TRUST_ALL)
    assert c["ts"].tolist() == [ny(2019, 3, 5, 16), ny(2019, 3, 5, 16, 0, 30), ny(2019, 3, 5, 22), 0]
    assert c["on_minute"].tolist() == [True, False, True, True]
    assert c["wall_day"].tolist() == [dt.date(2019, 3, 5)] * 3 + [dt.date(1970, 1, 1)]
    assert c["is_date"].tolist() == [False, False, False, True]


def test_no_rows():
    pub, prec = news_public_ns(rows([]), TRUST_ALL)
    assert pub.dtype == np.int64 and pub.shape == (0,)
    assert prec.dtype == object and prec.shape == (0,)


def test_precision_is_an_object_array():
    _, prec = news_public_ns(rows(["2019-03-05"]), TRUST_ALL)
    assert prec.dtype == object and prec.tolist() == ["date"]
