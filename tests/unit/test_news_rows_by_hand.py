"""The news rows' checks, flags and accepted frame (sources/news/rows.py) on tiny examples worked out by hand.

Expected public times are computed here with ``datetime`` and ``zoneinfo``; decision days by the
close rule (a time at or before a session's 16:00 New York close is decided that session, after it
the next one), with the sessions of early March 2021 (no holiday) written out; ids by sha1 as
docs/ingest.md describes them. Nothing is taken from the module's own output.
"""

import datetime as dt
import hashlib
import json
from zoneinfo import ZoneInfo

import numpy as np
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.sources import news
from finrag_dagster.sources.news import NewsClock, check_news_rows, normalize_news
from finrag_dagster.sources.news.columns import ROW_INDEX
from finrag_dagster.sources.news.rows import _accepted_frame, _naive_flags, _repair_flags, _title_flags, raw_json

NY = ZoneInfo("America/New_York")
UTC = dt.timezone.utc
TRUST_ALL = NewsClock(dates_only=False)
UNIVERSE = ["AAA", "BBB"]
cal = nyse()


def ny_ns(y, mo, d, h=0, mi=0, s=0) -> int:
    return int(dt.datetime(y, mo, d, h, mi, s, tzinfo=NY).timestamp()) * 10**9


def rows(dates, tickers=None, titles=None, urls=None, publishers=None, file="f.csv", repaired=False, **text) -> pl.DataFrame:
    """normalize_news rows of one file (strings as a CSV gives them)."""
    n = len(dates)
    data = {
        "Date": dates,
        "Article_title": titles if titles is not None else [f"t{i}" for i in range(n)],
        "Stock_symbol": tickers if tickers is not None else ["AAA"] * n,
        "Url": urls if urls is not None else [f"https://x.com/u{i}" for i in range(n)],
        "Publisher": publishers if publishers is not None else ["P"] * n,
        **text,
    }
    df = pl.DataFrame(data, schema={c: pl.Utf8 for c in data}).with_row_index(ROW_INDEX)
    return normalize_news(df, {c: c for c in data}, file, repaired)


def check(df, clock=TRUST_ALL, end=None, start=None, minute=None) -> pl.DataFrame:
    return check_news_rows(df, UNIVERSE, clock, cal, end, minute, start)


def reasons(checked: pl.DataFrame) -> list:
    return checked["reason"].to_list()


# --- quarantine reasons -----------------------------------------------------------------------


def test_each_reason_on_its_own():
    stamp = "2021-03-01 10:00:00+00:00"
    df = rows(
        ["", "junk", stamp, stamp, stamp, stamp, stamp, stamp, stamp],
        tickers=["AAA", "AAA", "", "ZZZ", "AAA", "aaa", "BBB", "AAA", "AAA"],
        titles=["t", "t", "t", "t", "", "t", "", "t", "t"],
        urls=["u", "u", "u", "u", "", "u", "u", "", ""],
    )
    got = check(df, NewsClock())
    assert reasons(got) == [
        news.R_MISSING_DATE,
        news.R_BAD_DATE,
        news.R_NO_TICKER,
        news.R_NOT_UNIVERSE,
        news.R_NO_TITLE_URL,
        None,  # a lower-case symbol is the upper-case ticker
        None,  # a URL without a title
        None,  # a title without a URL
        None,
    ]
    assert got["ticker"].to_list() == ["AAA", "AAA", "", "ZZZ", "AAA", "AAA", "BBB", "AAA", "AAA"]


def test_the_first_reason_wins():
    df = rows(["", "junk", "1999-06-01 10:00:00+00:00"], tickers=["", "ZZZ", ""], titles=["", "", ""], urls=["", "", ""])
    assert reasons(check(df)) == [news.R_MISSING_DATE, news.R_BAD_DATE, news.R_NO_TICKER]


def test_calendar_bounds_are_the_first_open_and_the_last_close():
    """The calendar runs from the open of Mon 3 Jan 2000 to the close of Tue 31 Dec 2030 (09:30 and 16:00 EST).

    Every stamp has second precision: the source has stamps with seconds."""
    assert (str(cal.sessions[0]), str(cal.sessions[-1])) == ("2000-01-03", "2030-12-31")
    df = rows(["2000-01-03 09:29:59-05:00", "2000-01-03 09:30:00-05:00", "2030-12-31 16:00:00-05:00", "2030-12-31 16:00:01-05:00"])
    got = check(df)
    assert got["precision"].to_list() == ["second"] * 4
    assert got["public_ns"].to_list() == [
        ny_ns(2000, 1, 3, 9, 29, 59),
        ny_ns(2000, 1, 3, 9, 30),
        ny_ns(2030, 12, 31, 16),
        ny_ns(2030, 12, 31, 16, 0, 1),
    ]
    assert got["in_cal"].to_list() == [False, True, True, False]
    assert reasons(got) == [news.R_OUT_OF_CALENDAR, None, None, news.R_OUT_OF_CALENDAR]


def test_a_date_is_public_at_the_end_of_the_new_york_day():
    """Read as a date, "2021-03-01 10:00:00+00:00" is public at 23:59:59 New York on 1 March."""
    got = check(rows(["2021-03-01 10:00:00+00:00"]), NewsClock())
    assert got["precision"].to_list() == ["date"]
    assert got["public_ns"].to_list() == [ny_ns(2021, 3, 1, 23, 59, 59)]


def test_no_stamp_has_public_ns_zero():
    got = check(rows(["junk", "2021-03-01 10:00:07+00:00"]))
    assert got["public_ns"].to_list() == [0, int(dt.datetime(2021, 3, 1, 10, 0, 7, tzinfo=UTC).timestamp()) * 10**9]
    assert got["public_ns"].dtype == pl.Int64
    assert got["in_cal"].to_list() == [False, True]


def test_before_the_start_is_decided_before_the_start_day():
    """calendar.start Tue 2 March: 16:00:00 on Mon 1 March is decided that Monday, 16:00:01 on Tuesday."""
    df = rows(["2021-03-01 15:59:59-05:00", "2021-03-01 16:00:00-05:00", "2021-03-01 16:00:01-05:00", "2021-03-02 12:00:07-05:00"])
    got = check(df, start=dt.date(2021, 3, 2))
    assert got["before_start"].to_list() == [True, True, False, False]
    assert reasons(got) == [news.R_BEFORE_START, news.R_BEFORE_START, None, None]
    # on a non-session start (Sat 6 March) what is decided on Mon 8 March is kept
    df = rows(["2021-03-05 16:00:00-05:00", "2021-03-05 16:00:01-05:00"])
    assert reasons(check(df, start=dt.date(2021, 3, 6))) == [news.R_BEFORE_START, None]
    assert check(df)["before_start"].to_list() == [False, False]


def test_before_the_start_checks_only_rows_in_the_calendar():
    df = rows(["1999-06-01 10:00:07+00:00", "2021-03-01 10:00:07+00:00"])
    got = check(df, start=dt.date(2021, 3, 2))
    assert got["before_start"].to_list() == [False, True]
    assert reasons(got) == [news.R_OUT_OF_CALENDAR, news.R_BEFORE_START]
    # nothing in the calendar: nothing is before its start (and no decision day is looked up)
    assert check(rows(["1999-06-01 10:00:07+00:00"]), start=dt.date(2021, 3, 2))["before_start"].to_list() == [False]


def test_after_the_end_is_after_the_end_days_close():
    """calendar.end Fri 5 March: its 16:00:00 close is the last public time kept."""
    df = rows(["2021-03-05 16:00:00-05:00", "2021-03-05 16:00:01-05:00", "2021-03-05 09:00:07-05:00"])
    got = check(df, end=dt.date(2021, 3, 5))
    assert got["after_end"].to_list() == [False, True, False]
    assert reasons(got) == [None, news.R_AFTER_END, None]
    # an end on a Saturday is the Friday before it; on Monday the Friday evening is kept
    assert reasons(check(df, end=dt.date(2021, 3, 6))) == [None, news.R_AFTER_END, None]
    assert reasons(check(df, end=dt.date(2021, 3, 8))) == [None, None, None]
    # an end on Thursday: all of Friday is after it
    assert reasons(check(df, end=dt.date(2021, 3, 4))) == [news.R_AFTER_END] * 3
    assert check(df)["after_end"].to_list() == [False, False, False]


def test_after_the_end_checks_only_rows_in_the_calendar():
    df = rows(["2031-06-02 10:00:07+00:00", "2021-03-05 21:00:07+00:00"])
    got = check(df, end=dt.date(2021, 3, 5))
    assert got["after_end"].to_list() == [False, True]
    assert reasons(got) == [news.R_OUT_OF_CALENDAR, news.R_AFTER_END]
    assert check(rows(["2031-06-02 10:00:07+00:00"]), end=dt.date(2021, 3, 5))["after_end"].to_list() == [False]


def test_a_date_on_the_end_day_is_after_the_end():
    """A date stamp of Fri 5 March is public at 23:59:59 that day, after its close: decided Monday, after the end."""
    got = check(rows(["2021-03-05 10:00:00+00:00", "2021-03-04 10:00:00+00:00"]), NewsClock(), end=dt.date(2021, 3, 5))
    assert reasons(got) == [news.R_AFTER_END, None]


def test_naive_time_only_for_a_trusted_clock():
    stamps = ["2021-03-01 14:05:00", "2021-03-01 14:05:00+00:00", "2021-03-01 00:00:00"]
    assert check(rows(stamps), TRUST_ALL)["naive_time"].to_list() == [True, False, False]
    assert check(rows(stamps), NewsClock(trusted_publishers=("p",)))["naive_time"].to_list() == [True, False, False]
    assert check(rows(stamps), NewsClock(trusted_files=("f.*",)))["naive_time"].to_list() == [True, False, False]
    assert check(rows(stamps), NewsClock(trusted_files=("g.*",)))["naive_time"].to_list() == [False, False, False]
    assert check(rows(stamps), NewsClock())["naive_time"].to_list() == [False, False, False]
    empty = check(rows([]), TRUST_ALL)
    assert empty.height == 0 and empty["naive_time"].dtype == pl.Boolean


def test_the_minute_stats_given_decide_the_precision():
    df = rows(["2021-03-01 14:05:00+00:00"])
    assert check(df)["precision"].to_list() == ["minute"]
    seconds = pl.DataFrame({"f": ["f.csv"], "p": ["P"], "timed": [2]}, schema={"f": pl.Utf8, "p": pl.Utf8, "timed": pl.Int64})
    seconds = seconds.with_columns(on_minute=pl.lit(1, dtype=pl.Int64))
    assert check(df, minute=seconds)["precision"].to_list() == ["second"]


# --- raw_json and flags -----------------------------------------------------------------------


def test_raw_json_keeps_the_raw_columns_sorted():
    df = rows(["2021-03-01"], tickers=["aaa"], titles=['T "q"'], urls=["https://x.com/a"], publishers=["Wire"], Article=["long body"])
    got = raw_json(df)
    assert got.name == "raw" and got.dtype == pl.Utf8
    want = '{"Article_title": "T \\"q\\"", "Date": "2021-03-01", "Publisher": "Wire", "Stock_symbol": "aaa", "Url": "https://x.com/a"}'
    assert got.to_list() == [want]
    assert json.loads(want)["Article_title"] == 'T "q"'


def good_rows(df, clock=TRUST_ALL):
    return check(df, clock).filter(pl.col("reason").is_null())


def test_repair_flags_name_the_rows_with_replaced_bytes():
    a = rows(["2021-03-01 10:00:00+00:00", "2021-03-01 10:00:00+00:00"], titles=["ok", "caf\ufffd"], file="b.csv", repaired=True)
    b = rows(["2021-03-02 10:00:00+00:00", "2021-03-05 10:00:00+00:00"], titles=["x\ufffd", "y\ufffd"], file="a.csv", repaired=True)
    c = rows(["2021-03-01 10:00:00+00:00"], titles=["z\ufffd"], file="c.csv")  # not a repaired file
    got = _repair_flags(good_rows(pl.concat([a, b, c]), NewsClock()), cal)
    detail = "the file is not valid UTF-8; undecodable bytes in this row were replaced"
    # dates: 1 March ends at 23:59:59 -> Tue 2; 2 March -> Wed 3; Fri 5 March -> Mon 8
    assert got.to_dicts() == [
        {"source_file": "a.csv", "source_row": 0, "ticker": "AAA", "date": dt.date(2021, 3, 3), "flag": news.F_REPAIRED, "detail": detail},
        {"source_file": "a.csv", "source_row": 1, "ticker": "AAA", "date": dt.date(2021, 3, 8), "flag": news.F_REPAIRED, "detail": detail},
        {"source_file": "b.csv", "source_row": 1, "ticker": "AAA", "date": dt.date(2021, 3, 2), "flag": news.F_REPAIRED, "detail": detail},
    ]
    assert got.schema == pl.Schema(
        {"source_file": pl.Utf8, "source_row": pl.Int64, "ticker": pl.Utf8, "date": pl.Date, "flag": pl.Utf8, "detail": pl.Utf8}
    )
    assert _repair_flags(good_rows(c), cal).height == 0


def test_title_flags_name_the_rows_titled_from_their_url():
    url = "https://x.com/news/apple-beats-estimates%3A-q2"
    df = rows(
        ["2021-03-01 15:00:07-05:00", "2021-03-01 16:30:07-05:00", "2021-03-01 16:30:07-05:00"], titles=["Has one", "", ""], urls=["u", url, "v"]
    )
    got = _title_flags(good_rows(df), cal)
    assert got.to_dicts() == [
        {
            "source_file": "f.csv",
            "source_row": 1,
            "ticker": "AAA",
            "date": dt.date(2021, 3, 2),  # 16:30:07 after Monday's close
            "flag": news.F_TITLE_FROM_URL,
            "detail": f"no Article_title: the title 'apple beats estimates: q2' was read from the Url {url!r}",
        },
        {
            "source_file": "f.csv",
            "source_row": 2,
            "ticker": "AAA",
            "date": dt.date(2021, 3, 2),
            "flag": news.F_TITLE_FROM_URL,
            "detail": "no Article_title: the title 'v' was read from the Url 'v'",
        },
    ]
    assert _title_flags(good_rows(df.head(1)), cal).height == 0
    # a parquet's slug title (title_from_url_slug) is not flagged
    slug = df.with_columns(pl.lit(True).alias("slug_title"))
    assert _title_flags(good_rows(slug), cal).height == 0


def test_naive_flags_name_the_trusted_times_without_an_offset():
    df = rows(["2021-03-01 14:05:00", "2021-03-01 14:05:00+00:00", "2021-03-05 09:00:00"], tickers=["AAA", "AAA", "bbb"])
    got = _naive_flags(good_rows(df), cal)
    tail = " has a time of day but no UTC offset: read as a date (public after that day's close); write the offset (e.g. 2021-03-01 14:05:00-05:00) to use its time of day"
    assert got.to_dicts() == [
        {
            "source_file": "f.csv",
            "source_row": 0,
            "ticker": "AAA",
            "date": dt.date(2021, 3, 2),
            "flag": "naive_time",
            "detail": "Date '2021-03-01 14:05:00'" + tail,
        },
        {
            "source_file": "f.csv",
            "source_row": 2,
            "ticker": "BBB",
            "date": dt.date(2021, 3, 8),
            "flag": "naive_time",
            "detail": "Date '2021-03-05 09:00:00'" + tail,
        },
    ]
    assert _naive_flags(good_rows(df, NewsClock()), cal).height == 0


# --- the accepted frame -----------------------------------------------------------------------


def news_id(ticker, url, iso, title) -> str:
    return "N" + hashlib.sha1("\x1f".join([ticker, url, iso, title]).encode()).hexdigest()[:16]


def test_accepted_frame_by_hand():
    url = "https://x.com/news/apple-beats-estimates%3A-q2"
    df = rows(
        ["2021-03-01 14:05:07-05:00", "2021-03-01 09:00:00+00:00", "2021-03-01 16:00:08-05:00"],
        tickers=["aaa", "BBB", "AAA"],
        titles=["Title A", "", "Title C"],
        urls=["https://x.com/a", url, "https://x.com/c"],
        publishers=["Wire", "Blog", "Wire"],
        Article=["First one. Second one. Third one.", "Body.", "C body."],
        Lsa_summary=["", "", ""],
        Luhn_summary=["", "luhn", ""],
        Textrank_summary=["", "text", "tr"],
    )
    good = good_rows(df, NewsClock(trusted_publishers=("Wire",)))
    got = _accepted_frame(good, cal, keep_order=True)
    assert got.columns == [
        "news_id",
        "ticker",
        "public_time",
        "source_time",
        "time_precision",
        "title",
        "summary",
        "article",
        "url",
        "publisher",
        "source_file",
        "source_row",
        "date",
    ]
    assert got.schema["public_time"] == pl.Datetime("us", "UTC") and got.schema["source_time"] == pl.Datetime("us", "UTC")
    assert got.schema["date"] == pl.Date and got.schema["source_row"] == pl.Int64
    a_time = dt.datetime(2021, 3, 1, 19, 5, 7, tzinfo=UTC)
    c_time = dt.datetime(2021, 3, 1, 21, 0, 8, tzinfo=UTC)
    b_public = dt.datetime(2021, 3, 1, 23, 59, 59, tzinfo=NY)  # Blog's clock is not trusted: a date
    assert got.to_dicts() == [
        {
            "news_id": news_id("AAA", "https://x.com/a", "2021-03-01T19:05:07+00:00", "Title A"),
            "ticker": "AAA",
            "public_time": a_time,
            "source_time": a_time,
            "time_precision": "second",
            "title": "Title A",
            "summary": "First one. Second one.",
            "article": "First one. Second one. Third one.",
            "url": "https://x.com/a",
            "publisher": "Wire",
            "source_file": "f.csv",
            "source_row": 0,
            "date": dt.date(2021, 3, 1),
        },
        {
            "news_id": news_id("BBB", url, "2021-03-01T09:00:00+00:00", "apple beats estimates: q2"),
            "ticker": "BBB",
            "public_time": b_public,
            "source_time": dt.datetime(2021, 3, 1, 9, tzinfo=UTC),
            "time_precision": "date",
            "title": "apple beats estimates: q2",
            "summary": "luhn",
            "article": "Body.",
            "url": url,
            "publisher": "Blog",
            "source_file": "f.csv",
            "source_row": 1,
            "date": dt.date(2021, 3, 2),
        },
        {
            "news_id": news_id("AAA", "https://x.com/c", "2021-03-01T21:00:08+00:00", "Title C"),
            "ticker": "AAA",
            "public_time": c_time,
            "source_time": c_time,
            "time_precision": "second",
            "title": "Title C",
            "summary": "tr",
            "article": "C body.",
            "url": "https://x.com/c",
            "publisher": "Wire",
            "source_file": "f.csv",
            "source_row": 2,
            "date": dt.date(2021, 3, 2),  # 16:00:08 EST: after Monday's close
        },
    ]
    # by default sorted by public time (row 2 at 21:00:08 UTC before row 1 at 04:59:59 UTC on the 2nd)
    assert _accepted_frame(good, cal)["source_row"].to_list() == [0, 2, 1]


def test_accepted_frame_breaks_ties_by_news_id():
    """Three date stamps of one day share their public time: the ids order them."""
    urls = ["https://x.com/a", "https://x.com/b", "https://x.com/c", "https://x.com/d"]
    df = rows(["2021-03-01 10:00:00+00:00"] * 4, urls=urls, titles=["t"] * 4)
    good = good_rows(df, NewsClock())
    ids = [news_id("AAA", u, "2021-03-01T10:00:00+00:00", "t") for u in urls]
    got = _accepted_frame(good, cal)
    assert got["news_id"].to_list() == sorted(ids)
    assert got["source_row"].to_list() == list(np.argsort(ids))
    assert sorted(ids) != ids  # the file's order is not the ids' order
    assert _accepted_frame(good, cal, keep_order=True)["news_id"].to_list() == ids


def test_accepted_frame_sorts_by_public_time_before_the_id():
    """The earlier row has the larger id: public time decides first."""
    df = rows(["2021-03-01 16:00:07+00:00", "2021-03-01 15:00:07+00:00"], titles=["t1", "t0"], urls=["https://x.com/z", "https://x.com/a"])
    late = news_id("AAA", "https://x.com/z", "2021-03-01T16:00:07+00:00", "t1")
    early = news_id("AAA", "https://x.com/a", "2021-03-01T15:00:07+00:00", "t0")
    assert early > late
    got = _accepted_frame(good_rows(df), cal)
    assert got["news_id"].to_list() == [early, late]
    assert got["public_time"].to_list() == [dt.datetime(2021, 3, 1, 15, 0, 7, tzinfo=UTC), dt.datetime(2021, 3, 1, 16, 0, 7, tzinfo=UTC)]


def test_accepted_frame_decodes_a_parquet_slug_title():
    """A ``title_from_url_slug`` row's title is the slug, percent-decoded ("%3A" is ":")."""
    df = rows(["2021-03-01 15:00:07+00:00", "2021-03-01 15:00:07+00:00"], titles=["apple stock nasdaq%3Aaapl", "50%25 off"])
    df = df.with_columns(pl.Series("slug_title", [True, False]))
    got = _accepted_frame(good_rows(df), cal, keep_order=True)
    assert got["title"].to_list() == ["apple stock nasdaq:aapl", "50%25 off"]


def test_one_flagged_row_is_flagged():
    one = rows(["2021-03-01 10:00:00+00:00"], titles=["caf\ufffd"], repaired=True)
    assert _repair_flags(good_rows(one, NewsClock()), cal).select("source_row", "date", "flag").rows() == [(0, dt.date(2021, 3, 2), news.F_REPAIRED)]
    one = rows(["2021-03-01 15:00:07-05:00"], titles=[""], urls=["https://x.com/a-b"])
    assert _title_flags(good_rows(one), cal).select("source_row", "date", "detail").rows() == [
        (0, dt.date(2021, 3, 1), "no Article_title: the title 'a b' was read from the Url 'https://x.com/a-b'")
    ]
    one = rows(["2021-03-01 14:05:00"])
    assert _naive_flags(good_rows(one), cal).select("source_row", "date", "flag").rows() == [(0, dt.date(2021, 3, 2), news.F_NAIVE_TIME)]


def test_repair_flags_are_in_row_order_within_a_file():
    df = rows(["2021-03-01 10:00:00+00:00"] * 3, titles=["x\ufffd", "y\ufffd", "z\ufffd"], repaired=True).reverse()
    assert _repair_flags(good_rows(df, NewsClock()), cal)["source_row"].to_list() == [0, 1, 2]


def test_raw_json_of_no_rows_is_a_string_column():
    got = raw_json(rows([]))
    assert got.name == "raw" and got.dtype == pl.Utf8 and got.len() == 0
