"""FNSPID news loader: the real parquet and raw CSV fixtures (tests/data/real), and malformed rows.

The parquet is a 242-row slice of the development sample's news (tests/data/real/PROVENANCE.md):
the first 50 rows of each ticker, the 25 INTC rows of the raw CSV, the 12 rows of the 6 URLs filed
under two tickers, the AAPL URL listed twice, and the 5 AAPL rows with a time of day up to 29 Jan 2024.
"""

import datetime as dt

import numpy as np
import pandas as pd
import polars as pl
import pytest

from finrag_dagster.core.calendar import date_only_public_time, nyse
from finrag_dagster.core.storage.schemas import NEWS_RAW
from finrag_dagster.sources import news
from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.news import load_news

UNIVERSE = {"AAPL", "AAL", "DLTR", "INTC", "MSFT", "QQQ"}
HEADER = "Date,Article_title,Stock_symbol,Url,Publisher,Author,Article,Lsa_summary,Luhn_summary,Textrank_summary,Lexrank_summary\n"
cal = nyse()


@pytest.fixture(scope="module")
def parquet_news(real_data):
    """The real slice with every clock trusted (``dates_only=False``): the time-of-day rules."""
    return load_news(real_data / "news" / "fnspid_news.parquet", UNIVERSE, dates_only=False)


@pytest.fixture(scope="module")
def raw_csv(real_data):
    return real_data / "raw" / "fnspid_news" / "tech_2021_batch_01.csv"


def test_parquet_row_counts_and_schema(parquet_news):
    r = parquet_news
    assert r.rows_in == 242  # the slice's rows (PROVENANCE.md)
    assert r.accepted.height + r.quarantine.height == 242
    assert r.quarantine.height == 0
    assert r.accepted.columns == NEWS_RAW.schema.names + ["date"]
    expected = pl.from_arrow(NEWS_RAW.schema.empty_table()).schema
    assert {c: r.accepted.schema[c] for c in expected} == dict(expected)
    assert r.accepted.schema["date"] == pl.Date
    assert r.accepted["news_id"].is_unique().all()
    # date_has_time is authoritative: the slice's 5 timed AAPL rows carry a time of day, every other row
    # is a date; the scraper's stamps are whole minutes ("03:33 am EST"), so they have minute precision
    prec = dict(r.accepted.group_by("time_precision").len().iter_rows())
    assert prec == {"minute": 5, "date": 237}
    assert set(r.accepted.filter(pl.col("time_precision") == "minute")["ticker"]) == {"AAPL"}


def test_by_default_no_fnspid_clock_is_trusted(real_data):
    r = load_news(real_data / "news" / "fnspid_news.parquet", UNIVERSE)
    assert r.rows_in == 242 and r.quarantine.height == 0
    assert set(r.accepted["time_precision"]) == {"date"}


def test_same_url_under_several_tickers_is_not_a_duplicate(parquet_news, real_data):
    src = pl.read_parquet(real_data / "news" / "fnspid_news.parquet")
    want = src.group_by("Url").agg(pl.col("Stock_symbol").n_unique().alias("n")).filter(pl.col("n") > 1)
    got = parquet_news.accepted.group_by("url").agg(pl.col("ticker").n_unique().alias("n")).filter(pl.col("n") > 1)
    assert want.height == 6  # every such URL of the sample is in the slice (the sample's PROVENANCE says 7; 6 observed)
    assert sorted(got["url"].to_list()) == sorted(want["Url"].to_list())


def test_date_only_rows_are_decided_on_the_next_session(parquet_news):
    acc = parquet_news.accepted.filter(pl.col("time_precision") == "date")
    assert acc.height == 237
    for row in acc.iter_rows(named=True):
        day = row["source_time"].date()
        assert row["public_time"] == date_only_public_time(day).to_pydatetime()
        assert row["date"] == cal.next_session(day)
    # 2021-12-23 (Thu) -> Fri 24 Dec 2021 is the Christmas holiday -> Mon 27
    intc = acc.filter((pl.col("ticker") == "INTC") & (pl.col("source_time").dt.date() == dt.date(2021, 12, 23)))
    assert intc.height == 4 and set(intc["date"]) == {dt.date(2021, 12, 27)}  # the raw CSV's 4 rows of that day


def test_timed_rows_use_the_close_rule(parquet_news):
    timed = parquet_news.accepted.filter(pl.col("time_precision") == "minute")
    assert (timed["public_time"] == timed["source_time"] + dt.timedelta(seconds=59)).all()  # end of the minute
    by_time = {r["source_time"]: r["date"] for r in timed.iter_rows(named=True)}
    utc = dt.timezone.utc
    # 03:33 ET pre-market -> same day; 16:27 ET after the close -> next session
    assert by_time[dt.datetime(2024, 1, 25, 8, 33, tzinfo=utc)] == dt.date(2024, 1, 25)
    assert by_time[dt.datetime(2024, 1, 29, 21, 27, tzinfo=utc)] == dt.date(2024, 1, 30)
    # slug titles are percent-decoded
    assert not timed["title"].str.contains("%3A").any()


def test_raw_fnspid_csv_with_multiline_articles(raw_csv):
    r = load_news(raw_csv, UNIVERSE)
    assert r.rows_in == 25 and r.accepted.height == 25 and r.quarantine.height == 0
    acc = r.accepted
    assert set(acc["ticker"]) == {"INTC"}
    assert acc["article"].str.contains("\n").sum() == 25  # quoted multi-line Article fields kept whole
    assert set(acc["time_precision"]) == {"date"}
    assert acc["source_file"].unique().to_list() == ["tech_2021_batch_01.csv"]
    assert sorted(acc["source_row"].to_list()) == list(range(25))
    assert (acc["summary"].str.len_chars() > 0).all()
    first = acc.filter(pl.col("source_row") == 0).row(0, named=True)
    assert first["title"] == "Companies will take breakup pitch too far in 2022"
    assert first["source_time"] == dt.datetime(2021, 12, 31, tzinfo=dt.timezone.utc)
    assert first["date"] == dt.date(2022, 1, 3)  # Fri 31 Dec 2021 after close -> Mon 3 Jan 2022


def test_rows_in_both_files_are_quarantined_as_duplicates(real_data, raw_csv):
    r = load_news([real_data / "news" / "*.parquet", raw_csv], UNIVERSE)
    assert r.rows_in == 242 + 25
    assert r.accepted.height == 242
    assert r.quarantine.height == 25
    assert set(r.quarantine["reason"]) == {news.R_DUPLICATE}
    # the parquet sorts first (news/ < raw/), so the CSV's copies are the duplicates
    assert set(r.quarantine["source_file"]) == {"tech_2021_batch_01.csv"}


def test_loading_is_deterministic(real_data):
    a = load_news(real_data / "news" / "fnspid_news.parquet", UNIVERSE).accepted
    b = load_news(str(real_data / "news" / "fnspid_news.parquet"), UNIVERSE).accepted
    assert a.equals(b)
    assert a["public_time"].is_sorted()


def _write(tmp_path, name, body):
    f = tmp_path / name
    f.write_text(HEADER + body, encoding="utf-8")
    return f


def test_malformed_rows_go_to_quarantine_with_reasons(tmp_path):
    rows = [
        "not-a-date,Title A,AAPL,https://x.com/a,P,,Body.,,,,\n",  # 0 bad date
        ",Title B,AAPL,https://x.com/b,P,,Body.,,,,\n",  # 1 missing date
        "2021-03-01 00:00:00+00:00,Title C,,https://x.com/c,P,,Body.,,,,\n",  # 2 no ticker
        "2021-03-01 00:00:00+00:00,Title D,ZZZZ,https://x.com/d,P,,Body.,,,,\n",  # 3 unknown ticker
        "2021-03-01 00:00:00+00:00,,AAPL,,P,,Body.,,,,\n",  # 4 no title, no url
        "1990-03-01 00:00:00+00:00,Title F,AAPL,https://x.com/f,P,,Body.,,,,\n",  # 5 before the calendar
        '2021-03-01 14:05:00-05:00,Title G,aapl,https://x.com/g,P,,"First one. Second one. Third one.",,,,\n',  # 6 ok
        "2021-03-01 14:05:00-05:00,Title G again,AAPL,https://x.com/g,P,,Body.,,,,\n",  # 7 duplicate of 6
        "2021-03-01 14:05:00-05:00,Title G,MSFT,https://x.com/g,P,,Body.,,,,\n",  # 8 same url, other ticker: ok
        "2020-06-05 06:30:54 UTC,,AAPL,https://x.com/news/apple-beats-estimates%3A-q2,P,,,lsa,luhn,,\n",  # 9 ok
    ]
    r = load_news(_write(tmp_path, "bad.csv", "".join(rows)), UNIVERSE, dates_only=False)
    assert r.rows_in == 10
    reasons = dict(zip(r.quarantine["source_row"], r.quarantine["reason"]))
    assert reasons == {
        0: news.R_BAD_DATE,
        1: news.R_MISSING_DATE,
        2: news.R_NO_TICKER,
        3: news.R_NOT_UNIVERSE,
        4: news.R_NO_TITLE_URL,
        5: news.R_OUT_OF_CALENDAR,
        7: news.R_DUPLICATE,
    }
    assert '"Stock_symbol": "ZZZZ"' in r.quarantine.filter(pl.col("source_row") == 3)["raw"][0]
    acc = {row["source_row"]: row for row in r.accepted.iter_rows(named=True)}
    assert set(acc) == {6, 8, 9}
    g = acc[6]
    assert g["ticker"] == "AAPL"
    assert g["source_time"] == dt.datetime(2021, 3, 1, 19, 5, tzinfo=dt.timezone.utc)  # -05:00 -> UTC
    assert g["time_precision"] == "second" and g["public_time"] == g["source_time"]
    assert g["date"] == dt.date(2021, 3, 1)
    assert g["summary"] == "First one. Second one."  # no summaries -> first two sentences
    s = acc[9]
    assert s["source_time"] == dt.datetime(2020, 6, 5, 6, 30, 54, tzinfo=dt.timezone.utc)
    assert s["title"] == "apple beats estimates: q2"  # empty title -> URL slug
    assert s["summary"] == "lsa"


def test_dates_only_treats_every_stamp_as_a_date(tmp_path):
    f = _write(tmp_path, "t.csv", "2021-03-01 14:05:00-05:00,T,AAPL,https://x.com/t,P,,B,,,,\n")
    timed = load_news(f, UNIVERSE, dates_only=False).accepted.row(0, named=True)
    dated = load_news(f, UNIVERSE).accepted.row(0, named=True)  # the default
    assert timed["date"] == dt.date(2021, 3, 1)
    assert dated["time_precision"] == "date"
    assert dated["public_time"] == pd.Timestamp("2021-03-01 23:59:59", tz="America/New_York").tz_convert("UTC")
    assert dated["date"] == dt.date(2021, 3, 2)
    assert timed["news_id"] == dated["news_id"]  # the id hangs on the source stamp, not the precision


def test_bad_paths_and_formats_are_errors(tmp_path):
    with pytest.raises(SourceError, match="matches no file"):
        load_news(tmp_path / "*.csv", UNIVERSE)
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(SourceError, match="unknown news file format"):
        load_news(tmp_path / "x.txt", UNIVERSE)
    (tmp_path / "y.csv").write_text("a,b\n1,2\n")
    with pytest.raises(SourceError, match="not an FNSPID news file"):
        load_news(tmp_path / "y.csv", UNIVERSE)


def test_parse_news_times_formats():
    ns = news.parse_news_times(["2021-12-31 00:00:00+00:00", "2020-06-05 06:30:54 UTC", "2021-03-01 14:05:00-05:00", "junk", None])
    got = [None if v == np.iinfo(np.int64).min else pd.Timestamp(v, tz="UTC") for v in ns]
    assert got[:3] == [
        pd.Timestamp("2021-12-31 00:00", tz="UTC"),
        pd.Timestamp("2020-06-05 06:30:54", tz="UTC"),
        pd.Timestamp("2021-03-01 19:05", tz="UTC"),
    ]
    assert got[3:] == [None, None]
