"""Each source's true clock (docs/method.md §1): a stamp stands for the end of its precision, FNSPID's time of
day is not trusted unless the user trusts it, a local-midnight stamp is a date. Real rows from the
sample in ``tests/data/news_clock`` (see its PROVENANCE.md)."""

import datetime as dt
from pathlib import Path

import pandas as pd
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.settings import Settings
from finrag_dagster.sources.news import NewsClock, load_news
from finrag_dagster.sources.registry import news_clock

DATA = Path(__file__).resolve().parents[1] / "data" / "news_clock"
HEADER = "Date,Article_title,Stock_symbol,Url,Publisher,Author,Article,Lsa_summary,Luhn_summary,Textrank_summary,Lexrank_summary\n"
UNIVERSE = {"AAPL", "INTC", "AAA"}
cal = nyse()
NY = "America/New_York"


def _by_url(res):
    return {r["url"]: r for r in res.accepted.iter_rows(named=True)}


def test_fnspid_default_reads_every_stamp_as_a_date():
    """FNSPID's offsets are applied the wrong way: by default only the date is trusted."""
    res = load_news([DATA / "aapl_scraper.csv", DATA / "fnspid_nasdaq.csv"], UNIVERSE)
    assert res.rows_in == 6 and res.quarantine.height == 0
    assert set(res.accepted["time_precision"]) == {"date"}
    close_0129 = _by_url(res)["https://www.nasdaq.com/articles/apple-stock-nasdaq%3Aaapl%3A-vision-pro-is-a-potential-silver-lining"]
    assert close_0129["public_time"] == pd.Timestamp("2024-01-29 23:59:59", tz=NY).tz_convert("UTC")
    assert close_0129["date"] == dt.date(2024, 1, 30)


def test_wrong_way_offset_after_close_news_is_not_same_day(tmp_path):
    """An item published after the close (18:10 EDT) that FNSPID stamps 14:10 UTC (10:10 EDT)."""
    f = tmp_path / "fnspid.csv"
    f.write_text(HEADER + "2020-06-05 14:10:00 UTC,t,AAA,u-late,Benzinga,,b,,,,\n2020-06-05 06:30:54 UTC,t,AAA,u-bz,Benzinga,,b,,,,\n")
    trusted = _by_url(load_news(f, UNIVERSE, clock=NewsClock(trusted_publishers=("benzinga",))))
    default = _by_url(load_news(f, UNIVERSE))
    # trusting the wrong clock decides the after-close item on Fri 5 June: a look-ahead
    assert trusted["u-late"]["date"] == dt.date(2020, 6, 5)
    # by default it is decided on the next session, as its true time (18:10 EDT) would be
    assert default["u-late"]["date"] == dt.date(2020, 6, 8) == cal.decision_day(pd.Timestamp("2020-06-05 18:10", tz=NY))
    # the documented Benzinga item (true time 10:30:54 EDT, a Friday session) is never decided earlier than it was
    assert default["u-bz"]["date"] >= cal.decision_day(pd.Timestamp("2020-06-05 10:30:54", tz=NY))


def test_minute_precision_stands_for_the_end_of_the_minute():
    """The scraper's stamps are whole minutes: 16:00 belongs to the next session."""
    res = load_news(DATA / "aapl_scraper.csv", UNIVERSE, clock=NewsClock(trusted_files=("aapl_*.csv",)))
    acc = res.accepted
    assert set(acc["time_precision"]) == {"minute"}
    assert (acc["public_time"] - acc["source_time"] == dt.timedelta(seconds=59)).all()
    at_close = _by_url(res)["https://www.nasdaq.com/articles/apple-stock-nasdaq%3Aaapl%3A-vision-pro-is-a-potential-silver-lining"]
    assert at_close["source_time"] == cal.close_time(dt.date(2024, 1, 29)).to_pydatetime()
    assert at_close["date"] == dt.date(2024, 1, 30)  # not close(29 Jan) -> close(30 Jan), which it could not trade
    pre = _by_url(res)["https://www.nasdaq.com/articles/zacks-earnings-trends-highlights%3A-amazon-alphabet-apple-microsoft-nvidia"]
    assert pre["date"] == dt.date(2024, 1, 25)  # 03:33 EST pre-market: that day


def test_a_source_with_seconds_keeps_second_precision(tmp_path):
    f = tmp_path / "wire.csv"
    f.write_text(HEADER + "2021-03-01 21:00:00+00:00,t,AAA,u1,Wire,,b,,,,\n2021-03-01 15:00:07+00:00,t,AAA,u2,Wire,,b,,,,\n")
    acc = _by_url(load_news(f, UNIVERSE, dates_only=False))
    assert acc["u1"]["time_precision"] == "second" and acc["u1"]["public_time"] == acc["u1"]["source_time"]
    assert acc["u1"]["date"] == dt.date(2021, 3, 1)  # 16:00:00 EST exactly, with second precision: that close


def test_local_midnight_with_an_offset_is_a_date(tmp_path):
    f = tmp_path / "n.csv"
    f.write_text(
        HEADER + "2021-03-01 00:00:00-05:00,t,AAA,u1,P,,b,,,,\n2021-03-01 00:00-05:00,t,AAA,u2,P,,b,,,,\n"
        "2021-03-01 09:15:00-05:00,t,AAA,u3,P,,b,,,,\n"
    )
    acc = _by_url(load_news(f, UNIVERSE, dates_only=False))
    for u in ("u1", "u2"):
        assert acc[u]["time_precision"] == "date"
        assert acc[u]["public_time"] == pd.Timestamp("2021-03-01 23:59:59", tz=NY).tz_convert("UTC")
        assert acc[u]["date"] == dt.date(2021, 3, 2)  # not 05:00 UTC = pre-market 1 March
    assert acc["u3"]["time_precision"] == "minute" and acc["u3"]["date"] == dt.date(2021, 3, 1)


def test_settings_choose_the_clock():
    assert news_clock(Settings()).dates_only is False  # the embedded world's stamps are generated true
    files = Settings(sources={"kind": "files", "universe": "u.csv"})
    assert news_clock(files) == NewsClock(dates_only=True)
    trusted = Settings(sources={"kind": "files", "universe": "u.csv", "news_trusted_publishers": ["Benzinga"]})
    assert news_clock(trusted).trusted(["Benzinga", "Reuters"], ["a.csv", "a.csv"]).tolist() == [True, False]


def test_news_after_the_calendar_end_is_quarantined(tmp_path):
    f = tmp_path / "n.csv"
    f.write_text(HEADER + "2021-03-01 00:00:00+00:00,t,AAA,u1,P,,b,,,,\n2021-06-30 00:00:00+00:00,t,AAA,u2,P,,b,,,,\n")
    res = load_news(f, UNIVERSE, calendar_end=dt.date(2021, 6, 30))
    assert res.accepted["url"].to_list() == ["u1"]
    assert res.quarantine["reason"].to_list() == ["decision day after the calendar's end (calendar.end)"]
    assert res.rows_in == 2
    assert pl.Series(res.accepted["date"]).max() <= dt.date(2021, 6, 30)
