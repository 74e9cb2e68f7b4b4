"""docs/method.md §1 decision-day rule: one test per case of that rule."""

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from finrag_dagster.core.calendar import CalendarError, date_only_public_time, eastern_to_utc, maturing_on, nyse, overdue_sessions

NY = "America/New_York"
cal = nyse()


def et(s: str) -> pd.Timestamp:
    return pd.Timestamp(s, tz=NY)


def d(s: str) -> dt.date:
    return dt.date.fromisoformat(s)


def test_regular_hours_news_is_decided_at_that_days_close():
    assert cal.decision_day(et("2021-03-03 11:15")) == d("2021-03-03")
    assert cal.close_time(d("2021-03-03")) == pd.Timestamp("2021-03-03 21:00", tz="UTC")


def test_pre_market_news_is_decided_the_same_day():
    assert cal.decision_day(et("2021-03-03 07:30")) == d("2021-03-03")


def test_after_close_news_moves_to_the_next_session():
    assert cal.decision_day(et("2021-03-03 16:00:01")) == d("2021-03-04")
    # exactly at the close counts as "at or after": that close is the decision time
    assert cal.decision_day(et("2021-03-03 16:00:00")) == d("2021-03-03")


def test_weekend_news_moves_to_monday():
    assert cal.decision_day(et("2021-03-06 12:00")) == d("2021-03-08")


def test_holiday_news_moves_to_the_next_session():
    # Independence Day observed on Monday 2021-07-05
    assert cal.decision_day(et("2021-07-05 10:00")) == d("2021-07-06")
    assert not cal.is_session(d("2021-07-05"))


def test_early_close_day_after_1pm_is_the_next_session():
    # Black Friday 2019 closed at 13:00 ET
    assert cal.close_time(d("2019-11-29")) == pd.Timestamp("2019-11-29 18:00", tz="UTC")
    assert cal.decision_day(et("2019-11-29 12:59")) == d("2019-11-29")
    assert cal.decision_day(et("2019-11-29 13:30")) == d("2019-12-02")


def test_dst_changes_the_utc_close():
    # 2021-03-12 (EST) closes 21:00 UTC, 2021-03-15 (EDT) closes 20:00 UTC
    assert cal.close_time(d("2021-03-12")) == pd.Timestamp("2021-03-12 21:00", tz="UTC")
    assert cal.close_time(d("2021-03-15")) == pd.Timestamp("2021-03-15 20:00", tz="UTC")
    # 20:30 UTC on the EDT day is after the close, on the EST day it is before
    assert cal.decision_day(pd.Timestamp("2021-03-15 20:30", tz="UTC")) == d("2021-03-16")
    assert cal.decision_day(pd.Timestamp("2021-03-12 20:30", tz="UTC")) == d("2021-03-12")


def test_date_only_items_count_as_after_that_days_close():
    t = date_only_public_time("2021-03-03")
    assert t == et("2021-03-03 23:59:59")
    assert cal.decision_day(t) == d("2021-03-04")
    # a date-only Friday item is decided on Monday, a date-only Saturday item too
    assert cal.decision_day(date_only_public_time("2021-03-05")) == d("2021-03-08")
    assert cal.decision_day(date_only_public_time("2021-03-06")) == d("2021-03-08")


def test_eastern_wall_clock_headers_convert_to_utc_across_dst():
    assert eastern_to_utc("20230202180130") == pd.Timestamp("2023-02-02 23:01:30", tz="UTC")
    assert eastern_to_utc("2023-08-03 16:31:00") == pd.Timestamp("2023-08-03 20:31:00", tz="UTC")


def test_vectorised_decision_days_match_scalar_rule():
    ts = pd.to_datetime(["2021-03-03 14:00", "2021-03-03 22:00", "2021-03-06 15:00"], utc=True)
    got = cal.decision_days(ts.as_unit("ns").asi8)
    assert [x.item() for x in got] == [cal.decision_day(t) for t in ts]


def test_naive_timestamps_are_refused():
    with pytest.raises(CalendarError):
        cal.decision_day(pd.Timestamp("2021-03-03 10:00"))


def test_offsets_count_trading_days():
    assert cal.offset(d("2021-07-02"), 1) == d("2021-07-06")
    assert cal.offset(d("2021-07-06"), -1) == d("2021-07-02")
    with pytest.raises(CalendarError):
        cal.offset(d("2021-07-04"), 1)
    assert len(cal.sessions_in_range("2021-01-01", "2021-12-31")) == 252
    assert np.all(np.diff(cal.closes_ns) > 0)


def test_the_labels_maturing_at_a_close_are_h_sessions_back_and_not_before_the_first_day():
    cal = nyse()  # 2019-01-10 is a Thursday; New Year's Day is a holiday
    assert maturing_on(cal, "2019-01-10") == [("2019-01-09", 1), ("2019-01-07", 3), ("2019-01-03", 5)]
    assert maturing_on(cal, "2019-01-10", "2019-01-04") == [("2019-01-09", 1), ("2019-01-07", 3)]
    assert maturing_on(cal, "2019-01-10", "2019-01-07") == [("2019-01-09", 1), ("2019-01-07", 3)]  # the first day itself counts
    assert maturing_on(cal, "2019-01-07", "2019-01-03") == [("2019-01-04", 1)]  # D+3 of Jan 3 is Jan 8
    first = cal.sessions[0].item()
    assert maturing_on(cal, cal.offset(first, 2)) == [(cal.offset(first, 1).isoformat(), 1)]  # no session before the calendar's first
    assert maturing_on(cal, cal.offset(first, 3)) == [(cal.offset(first, 2).isoformat(), 1), (first.isoformat(), 3)]


DUE_AT = dt.time(20, 30)  # the decisions' deadline: 18:30 + the default allowance of 120 minutes


def ny(s: str) -> pd.Timestamp:
    return pd.Timestamp(s, tz="America/New_York").tz_convert("UTC")


def test_overdue_sessions_by_hand():
    cal = nyse()
    # Fri 2019-02-15, Presidents' Day Mon 02-18 (no session), Tue 02-19
    assert overdue_sessions(cal, "2019-02-14", ny("2019-02-19 20:29:59"), DUE_AT, set(), 10) == ["2019-02-14", "2019-02-15"]
    assert overdue_sessions(cal, "2019-02-14", ny("2019-02-19 20:30"), DUE_AT, set(), 10) == ["2019-02-14", "2019-02-15", "2019-02-19"]
    assert overdue_sessions(cal, "2019-02-14", ny("2019-02-19 20:30"), DUE_AT, {"2019-02-15"}, 10) == ["2019-02-14", "2019-02-19"]
    assert overdue_sessions(cal, "2019-02-14", ny("2019-02-19 23:00"), DUE_AT, set(), 2) == ["2019-02-15", "2019-02-19"]  # the last 2 due
    assert overdue_sessions(cal, "2019-02-20", ny("2019-02-19 23:00"), DUE_AT, set(), 10) == []  # nothing due before the first partition
    assert overdue_sessions(cal, "2019-02-19", ny("2019-02-19 20:30"), DUE_AT, set(), 10) == ["2019-02-19"]  # the first partition's own deadline
    # before the deadline the day before counts: Wednesday morning, Tuesday's decisions are due (Monday is a holiday)
    assert overdue_sessions(cal, "2019-02-14", ny("2019-02-20 10:00"), DUE_AT, set(), 1) == ["2019-02-19"]
    assert overdue_sessions(cal, "2019-02-14", ny("2019-02-20 10:00"), DUE_AT, set(), 0) == []  # a window of none
    # a clock in another zone is read as the instant it is: 01:00 UTC on the 20th is 20:00 New York on the 19th
    assert overdue_sessions(cal, "2019-02-19", pd.Timestamp("2019-02-20 01:00", tz="UTC"), DUE_AT, set(), 10) == []
