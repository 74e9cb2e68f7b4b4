"""The point-in-time guard's own boundaries and decision-time stamps, against values written by hand.

Every close below is the New York wall clock of the NYSE session, typed here (not read from the
calendar): 2021-11-24 (Wednesday before Thanksgiving) 16:00, 2021-11-26 (the early close) 13:00,
2021-11-29 16:00. The calendar must agree with them, and every stamp a decision carries must equal
them exactly:

* ``pit_violations`` (the evidence, news and anchors asset checks): a row of partition D is in
  place when close(D−1) < time <= close(D), to the microsecond;
* ``write_cards``: the cards of D come from D's ``returns`` row (never D+1's) and ``as_of`` = close(D);
* ``family_feedback``: ``FamilyFeedback.as_of`` is the last session of the market proxy's bars and
  the feedback lineage holds only labels matured by then (never a pending one).

The rest pins what mutation testing (scripts/mutants.py, docs/leaks.md "Mutation testing") found
untested in these modules: the calendar's session arithmetic at holidays, DST changes and its own
ends, the card's words at each threshold (thresholds exact in binary), and the feedback of each
variant and day.
"""

import datetime as dt
from types import SimpleNamespace

import numpy as np
import pandas as pd
import polars as pl
import pytest

from finrag_dagster.core import loop_io
from finrag_dagster.core.calendar import CalendarError, date_only_public_ns, date_only_public_time, eastern_to_utc, lookback_days, nyse
from finrag_dagster.core.context_card import CARD_SCHEMA, build_cards, market_trend, momentum_state, relative_state, vol_state, write_cards
from finrag_dagster.core.evidence import pit_violations
from finrag_dagster.core.loop import Variant
from finrag_dagster.core.memory.feedback import build_feedback, empty_feedback
from finrag_dagster.core.settings import CardSettings, Settings
from finrag_dagster.core.tables import Lake

cal = nyse()
US = pd.Timedelta(microseconds=1)
D_PREV, D, D_NEXT = dt.date(2021, 11, 24), dt.date(2021, 11, 26), dt.date(2021, 11, 29)


def ny(wall: str) -> pd.Timestamp:
    return pd.Timestamp(wall, tz="America/New_York").tz_convert("UTC")


CLOSE = {D_PREV: ny("2021-11-24 16:00"), D: ny("2021-11-26 13:00"), D_NEXT: ny("2021-11-29 16:00")}


def test_the_calendar_closes_are_the_new_york_wall_clock():
    for day, close in CLOSE.items():
        assert cal.close_time(day) == close
        assert cal.close_time(day.isoformat()) == close
    assert cal.offset(D, -1) == D_PREV and cal.offset(D, 1) == D_NEXT


class FrameLake:
    """A lake stub: ``read(table, dates=[d], columns=[c])`` gives column c of the rows filed under d."""

    def __init__(self, table: str, col: str, rows: dict[dt.date, list[pd.Timestamp]]):
        self.table, self.col, self.rows, self.reads = table, col, rows, []

    def read(self, table, dates, columns):
        assert table == self.table and columns == [self.col] and len(dates) == 1
        self.reads.append(dates[0])
        stamps = self.rows.get(dt.date.fromisoformat(dates[0]), [])
        return pl.DataFrame({self.col: [t.to_pydatetime() for t in stamps]}, schema={self.col: pl.Datetime("us", "UTC")})


BOUNDARY = [  # (public time, is it a violation in partition D)
    (CLOSE[D_PREV], True),
    (CLOSE[D_PREV] + US, False),
    (CLOSE[D] - US, False),
    (CLOSE[D], False),
    (CLOSE[D] + US, True),
    (CLOSE[D_NEXT], True),
]


@pytest.mark.parametrize("stamp,bad", BOUNDARY, ids=["close(D-1)", "close(D-1)+1us", "close(D)-1us", "close(D)", "close(D)+1us", "close(D+1)"])
def test_pit_violations_one_row_at_each_boundary(stamp, bad):
    lake = FrameLake("evidence", "public_time", {D: [stamp]})
    assert pit_violations(lake, cal, "evidence", [D.isoformat()]) == (["2021-11-26: 1"] if bad else [])


def test_pit_violations_counts_each_partition_on_its_own_interval():
    rows = {
        D_PREV: [CLOSE[D_PREV], CLOSE[D_PREV] - US, ny("2021-11-23 16:00") + US],  # all in place
        D: [t for t, _ in BOUNDARY],  # three violations
        D_NEXT: [CLOSE[D], CLOSE[D] + US, CLOSE[D_NEXT] + US, CLOSE[D_NEXT] + US],  # close(D) and the two after close(D+1)
    }
    lake = FrameLake("news_raw", "decision_time", rows)
    days = [D_PREV.isoformat(), "2021-11-30", D.isoformat(), D_NEXT.isoformat()]  # 30 Nov: an empty partition
    assert pit_violations(lake, cal, "news_raw", days, time_col="decision_time") == ["2021-11-26: 3", "2021-11-29: 3"]
    assert lake.reads == days
    assert pit_violations(FrameLake("anchors", "public_time", {}), cal, "anchors", days) == []


def test_pit_violations_on_the_first_session_has_no_lower_bound():
    first = cal.sessions[0].item()
    long_before = cal.close_time(first) - pd.Timedelta(days=400)
    lake = FrameLake("evidence", "public_time", {first: [long_before, cal.close_time(first)]})
    assert pit_violations(lake, cal, "evidence", [first.isoformat()]) == []
    lake = FrameLake("evidence", "public_time", {first: [long_before, cal.close_time(first) + US]})
    assert pit_violations(lake, cal, "evidence", [first.isoformat()]) == [f"{first.isoformat()}: 1"]
    before_1970 = pd.Timestamp("1969-07-20 20:17", tz="UTC")  # a negative epoch is in place too
    assert pit_violations(FrameLake("evidence", "public_time", {first: [before_1970]}), cal, "evidence", [first.isoformat()]) == []
    # the second session has its lower bound again: the first session's close
    second = cal.sessions[1].item()
    rows = {second: [cal.close_time(first), cal.close_time(first) + US, before_1970]}
    assert pit_violations(FrameLake("evidence", "public_time", rows), cal, "evidence", [second.isoformat()]) == [f"{second.isoformat()}: 2"]


# ------------------------------------------------------------------ context cards
RET_COLS = ("ret_1d", "ret_3d", "ret_5d", "ret_10d", "ret_20d", "vol_20d", "vol_252d")


def returns_row(ticker: str, k: int) -> dict:
    """A returns row whose every value is distinct per (ticker, day number k)."""
    base = {"AAA": 1, "BBB": 2, "QQQ": 3}[ticker]
    row = {"ticker": ticker, "adj_close": 100.0 + 10 * base + k, "n_obs_252d": 200 + k}
    for j, c in enumerate(RET_COLS):
        row[c] = (base * 0.001 + j * 0.01 + k * 0.0003) * (-1) ** (j + k)
    row["vol_20d"], row["vol_252d"] = abs(row["vol_20d"]) + 0.01, abs(row["vol_252d"]) + 0.02
    return row


def write_returns(lake: Lake, day: dt.date, tickers: tuple[str, ...], k: int) -> None:
    schema = {"ticker": pl.Utf8, "adj_close": pl.Float64, **dict.fromkeys(RET_COLS, pl.Float64), "n_obs_252d": pl.Int64}
    lake.write("returns", pl.DataFrame([returns_row(t, k) for t in tickers], schema=schema), date=day)


def test_cards_of_d_read_d_s_returns_and_are_stamped_close_d(tmp_path):
    lake = Lake(tmp_path)
    write_returns(lake, D_PREV, ("AAA", "BBB"), 0)  # no market bar: no cards
    write_returns(lake, D, ("AAA", "BBB", "QQQ"), 1)
    write_returns(lake, D_NEXT, ("AAA", "BBB", "QQQ"), 2)
    s = SimpleNamespace(market_ticker="QQQ", cards=CardSettings())
    days = [D_PREV.isoformat(), D.isoformat(), D_NEXT.isoformat()]
    counts, missing, first = write_cards(s, lake, cal, days)
    for k, day in ((1, D), (2, D_NEXT)):
        cards = lake.read("context_cards", dates=[day]).sort("ticker")
        assert cards["as_of"].to_list() == [CLOSE[day].to_pydatetime()] * 2, f"as_of of {day}"
        mk = returns_row("QQQ", k)
        for c in cards.iter_rows(named=True):
            r = returns_row(c["ticker"], k)
            for col in ("ret_1d", "ret_5d", "ret_20d", "vol_20d", "vol_252d"):
                assert c[col] == r[col] and c[f"mkt_{col}"] == mk[col], (day, c["ticker"], col)
            assert c["rel_5d"] == r["ret_5d"] - mk["ret_5d"] and c["rel_20d"] == r["ret_20d"] - mk["ret_20d"]
            assert f"as_of: {day.isoformat()} close" in c["card_text"]
            assert f"prior 1D {r['ret_1d'] * 100:+.2f}%" in c["card_text"]
    assert lake.read("context_cards", dates=[D_PREV]).height == 0
    assert counts == {days[0]: 0, days[1]: 2, days[2]: 2} and missing == [days[0]]
    assert first is not None and first.sort("ticker")["ret_1d"].to_list() == [returns_row("AAA", 1)["ret_1d"], returns_row("BBB", 1)["ret_1d"]]


# ------------------------------------------------------------------ feedback lineage
LAST = D  # the market proxy's last bar


def write_bars(lake: Lake) -> None:
    for day in cal.sessions_in_range("2021-11-15", "2021-12-03"):
        tickers = ["AAA"] + (["QQQ"] if day <= LAST else [])  # another ticker has later bars
        n = len(tickers)
        df = pl.DataFrame(
            {
                "ticker": tickers,
                "open": [None] * n,
                "high": [None] * n,
                "low": [None] * n,
                "close": [None] * n,
                "adj_close": [1.0] * n,
                "volume": [None] * n,
                "source_file": ["t"] * n,
            },
            schema_overrides={"open": pl.Float64, "high": pl.Float64, "low": pl.Float64, "close": pl.Float64, "volume": pl.Int64},
        )
        lake.write("prices", df, date=day)


SPLITS = {"train": ("2021-11-01", "2021-12-31"), "validation": ("2022-01-03", "2022-01-31"), "test": ("2022-02-01", "2022-02-28")}
MATURITY = {"BEFORE": D_PREV, "ON": LAST, "NEXT_SESSION": D_NEXT, "NEXT_WEEK": LAST + dt.timedelta(days=7)}


def run_feedback(tmp_path, monkeypatch, days: list[str], end: str = "2023-12-29"):
    """family_feedback over ``days`` with every day's outputs and labels (all "ok") replaced by the
    four labels of MATURITY; returns (FamilyFeedback, the as_of each day got, the rows written)."""
    lake = Lake(tmp_path)
    write_bars(lake)
    seen, written = [], []

    class Stub(Lake):
        def read(self, table, *a, **k):
            return super().read(table, *a, **k) if table == "prices" else pl.DataFrame()

        def write(self, table, df, **k):
            assert table == "feedback"
            written.append(df)

    tickers = list(MATURITY)
    out = pl.DataFrame(
        {
            "anchor_id": [f"a_{t}" for t in tickers],
            "ticker": tickers,
            "event_type": ["Other"] * 4,
            "horizon": ["1D"] * 4,
            "signal": [1] * 4,
            "cited_families": [["news"]] * 4,
        },
        schema_overrides={"signal": pl.Int8, "cited_families": pl.List(pl.Utf8)},
    )
    lab = pl.DataFrame(
        {"ticker": tickers, "horizon": ["1D"] * 4, "maturity_day": list(MATURITY.values()), "status": ["ok"] * 4, "y": [1] * 4, "z": [1.0] * 4},
        schema_overrides={"y": pl.Int8},
    )

    def day_feedback(s, lake_, fmap, v, frames, **k):
        seen.append(k["as_of"])
        return build_feedback(out, lab, pl.DataFrame(), k["as_of"], {"1D": {1: 1.0}}, {})

    monkeypatch.setattr(loop_io, "_day_feedback", day_feedback)
    s = Settings(lake_dir=tmp_path, calendar={"start": "2021-01-04", "decision_start": "2021-11-01", "end": end}, splits=SPLITS)
    fb = loop_io.family_feedback(s, Stub(tmp_path), cal, [Variant("no_memory", "no_memory", 0.0)], days)
    return fb, seen, written


def test_family_feedback_as_of_is_the_market_proxy_s_last_bar(tmp_path, monkeypatch):
    days = [d.isoformat() for d in cal.sessions_in_range("2021-11-17", "2021-11-23")]
    fb, seen, written = run_feedback(tmp_path, monkeypatch, days)
    assert fb.as_of == LAST and seen == [LAST] * len(days)
    assert len(written) == len(days)
    for df in written:  # the lineage: labels matured on or before the last bar only
        assert dict(zip(df["ticker"], df["maturity_day"])) == {"BEFORE": D_PREV, "ON": LAST}
    assert fb.rows == 2 * len(days)


def test_family_feedback_without_market_bars_is_as_of_the_day_before_the_first_day(tmp_path, monkeypatch):
    days = ["2021-12-06", "2021-12-07"]  # the market proxy's bars end before them
    fb, seen, written = run_feedback(tmp_path, monkeypatch, days)
    assert fb.as_of == dt.date(2021, 12, 5) and seen == [dt.date(2021, 12, 5)] * 2
    assert all(set(df["maturity_day"]) == set(MATURITY.values()) for df in written)  # all four matured by 5 Dec


# ------------------------------------------------------------------ the card's words (thresholds exact in binary)
CS = CardSettings(momentum_strong=0.5, momentum_mild=0.25, relative_band=0.125, vol_elevated_ratio=2.0, vol_calm_ratio=0.5, trend_band=0.25)
POS, NEG = "positive momentum", "negative momentum"


@pytest.mark.parametrize(
    "ret_20d,words",
    [(None, "unknown"), (float("nan"), "unknown"), (0.75, "strong " + POS), (0.5, "strong " + POS), (0.3, "mild " + POS), (0.25, "mild " + POS)]
    + [
        (0.2, "flat"),
        (0.0, "flat"),
        (-0.2, "flat"),
        (-0.25, "mild " + NEG),
        (-0.3, "mild " + NEG),
        (-0.5, "strong " + NEG),
        (-0.75, "strong " + NEG),
    ],
)
def test_momentum_words_at_and_around_each_threshold(ret_20d, words):
    assert momentum_state(ret_20d, CS) == words


@pytest.mark.parametrize(
    "rel_5d,words",
    [(None, "unknown"), (0.13, "outperformed"), (0.125, "in line with"), (0.0, "in line with"), (-0.125, "in line with"), (-0.13, "underperformed")],
)
def test_relative_words_at_and_around_the_band(rel_5d, words):
    got = relative_state(rel_5d, CS)
    assert got == (words if words == "unknown" else f"{words} the market proxy over the prior 5 days")


@pytest.mark.parametrize(
    "v20,v252,words",
    [
        (None, 0.5, "unknown"),
        (1.0, None, "unknown"),
        (1.0, float("nan"), "unknown"),
        (1.0, 0.0, "unknown"),
        (1.5, 0.5, "elevated"),
        (1.0, 0.5, "elevated"),
    ]
    + [(0.9, 0.5, "normal"), (0.5, 0.5, "normal"), (0.26, 0.5, "normal"), (0.25, 0.5, "calm"), (0.1, 0.5, "calm")],
)
def test_volatility_words_at_and_around_each_ratio(v20, v252, words):
    assert vol_state(v20, v252, CS) == words


@pytest.mark.parametrize(
    "mkt_20d,v20,v252,words",
    [(None, 1.0, 0.5, "unknown"), (0.3, None, None, "uptrend"), (0.25, 1.0, 0.5, "range-bound with elevated volatility")]
    + [(-0.25, 0.5, 0.5, "range-bound with normal volatility"), (-0.3, 0.25, 0.5, "downtrend with calm volatility"), (-0.3, None, 0.5, "downtrend")],
)
def test_market_trend_words(mkt_20d, v20, v252, words):
    assert market_trend(mkt_20d, v20, v252, CS) == words


def test_a_whole_card_written_out_by_hand():
    cols = {"ticker": pl.Utf8, "ret_1d": pl.Float64, "ret_5d": pl.Float64, "ret_20d": pl.Float64, "vol_20d": pl.Float64, "vol_252d": pl.Float64}
    day = pl.DataFrame([("AAA", 0.0123, 0.375, -0.3, 0.25, 0.5), ("QQQ", -0.0456, None, 0.3, 1.0, 0.5)], schema=cols, orient="row")
    cards = build_cards(day, "QQQ", "2021-11-26", CS)
    assert cards.schema == pl.Schema(CARD_SCHEMA)  # rel_5d has no value at all and stays Float64
    c = cards.row(0, named=True)
    assert c["rel_5d"] is None and c["rel_20d"] == -0.6 and (c["mkt_ret_1d"], c["mkt_vol_20d"], c["mkt_vol_252d"]) == (-0.0456, 1.0, 0.5)
    assert c["risk_state"] == "calm realized volatility for AAA, elevated for QQQ"
    assert c["card_text"].split("\n") == [
        "as_of: 2021-11-26 close",
        "market_proxy: QQQ",
        "AAA recent return: prior 1D +1.23%, prior 5D +37.50%, prior 20D -30.00% (mild negative momentum)",
        "relative performance: AAA unknown (n/a)",
        "risk state: calm realized volatility for AAA, elevated for QQQ",
        "market trend: QQQ uptrend with elevated volatility (prior 20D +30.00%)",
    ]
    # the stock's 5D and 20D returns missing, the market's there; a second stock with both
    day = pl.DataFrame(
        [("AAA", 0.0123, None, None, 0.25, 0.5), ("BBB", 0.0, 0.5, 0.5, 0.5, 0.5), ("QQQ", -0.0456, 0.25, 0.3, 1.0, 0.5)], schema=cols, orient="row"
    )
    a, b = build_cards(day, "QQQ", "2021-11-26", CS).rows(named=True)
    assert a["rel_5d"] is None and a["rel_20d"] is None and "prior 5D n/a, prior 20D n/a (unknown)" in a["card_text"]
    assert "relative performance: AAA unknown (n/a)" in a["card_text"]
    assert b["rel_5d"] == 0.25 and b["rel_20d"] == 0.2
    assert "relative performance: BBB outperformed the market proxy over the prior 5 days (+25.00%)" in b["card_text"].split("\n")
    with pytest.raises(ValueError, match=r"^context cards need exactly one SPY row in returns for 2021-11-26, got 0$"):
        build_cards(day, "SPY", "2021-11-26", CS)


# ------------------------------------------------------------------ the calendar, against the wall clock
def test_sessions_and_their_neighbours_around_a_holiday():
    assert cal.sessions_in_range("2021-11-24", "2021-11-29") == [D_PREV, D, D_NEXT]
    assert cal.sessions_in_range("2021-11-25", "2021-11-26") == [D] and cal.sessions_in_range("2021-11-25", "2021-11-25") == []
    assert [cal.is_session(x) for x in ("2021-11-24", "2021-11-25", dt.date(2021, 11, 26), "2099-01-02")] == [True, False, True, False]
    assert cal.is_session("2021-11-26T13:00:00+00:00") and cal.is_session(np.datetime64("2021-11-26T15:00")) and cal.is_session(pd.Timestamp(D))
    assert cal.next_session("2021-11-24") == D and cal.next_session("2021-11-25") == D and cal.next_session(D) == D_NEXT
    assert cal.previous_session(D) == D_PREV and cal.previous_session("2021-11-25") == D_PREV and cal.previous_session(D_NEXT) == D
    assert cal.offset(D, 0) == D and cal.offset(D_PREV, 2) == D_NEXT and cal.offset(D_NEXT, -2) == D_PREV
    assert cal.open_time(D) == ny("2021-11-26 09:30") and cal.open_time(D_NEXT) == ny("2021-11-29 09:30")


def test_the_calendar_s_ends_are_errors_never_wrapped_around():
    first, last = cal.sessions[0].item(), cal.sessions[-1].item()
    assert cal.offset(first, 0) == first and cal.offset(last, 0) == last and cal.session_index(first) == 0
    with pytest.raises(CalendarError, match=rf"^{first.isoformat()} -1 sessions is outside the calendar$"):
        cal.offset(first, -1)
    with pytest.raises(CalendarError, match=rf"^{last.isoformat()} \+1 sessions is outside the calendar$"):
        cal.offset(last, 1)
    with pytest.raises(CalendarError, match=r"^2021-11-25 is not an XNYS trading day$"):
        cal.session_index("2021-11-25")
    with pytest.raises(CalendarError, match="is not an XNYS trading day"):
        cal.session_index(last + dt.timedelta(days=3))
    with pytest.raises(CalendarError, match=f"^no session before {first.isoformat()}$"):
        cal.previous_session(first)
    with pytest.raises(CalendarError, match="^closes_for"):
        cal.closes_for(np.array(["2021-11-25"], dtype="datetime64[D]"))
    with pytest.raises(CalendarError, match="^closes_for"):
        cal.closes_for(np.array([last + dt.timedelta(days=3)], dtype="datetime64[D]"))


def test_decision_days_at_each_close_and_the_calendar_range():
    t = [CLOSE[D_PREV] + US, CLOSE[D] - US, CLOSE[D], CLOSE[D] + US, ny("2021-11-27 12:00"), CLOSE[D_NEXT]]
    ns = np.array([x.value for x in t], dtype=np.int64)
    assert cal.decision_days(ns).tolist() == [D, D, D, D_NEXT, D_NEXT, D_NEXT]
    assert [cal.decision_day(x) for x in t] == [D, D, D, D_NEXT, D_NEXT, D_NEXT]
    assert cal.decision_day("2021-11-26T13:00:00-05:00") == D and cal.decision_day("2021-11-26 18:00:00.000001+00:00") == D_NEXT
    closes = [CLOSE[d].value for d in (D, D, D, D_NEXT, D_NEXT, D_NEXT)]
    assert cal.decision_close_ns(ns).tolist() == closes
    assert cal.closes_for(np.array([D_PREV, D, D_NEXT], dtype="datetime64[D]")).tolist() == [CLOSE[d].value for d in (D_PREV, D, D_NEXT)]
    with pytest.raises(CalendarError, match=r"^naive timestamp '2021-11-26 10:00': store times as UTC$"):
        cal.decision_day("2021-11-26 10:00")
    outside = "^a public_time lies outside the XNYS calendar range$"
    with pytest.raises(CalendarError, match=outside):
        cal.decision_days(np.array([int(cal.closes_ns[-1]) + 1], dtype=np.int64))
    month = 30 * 86_400 * 10**9  # the earliest time accepted: 30 days before the first open
    earliest = int(cal.opens_ns[0]) - month
    assert cal.decision_days(np.array([earliest, int(cal.closes_ns[0])], dtype=np.int64)).tolist() == [cal.sessions[0].item()] * 2
    with pytest.raises(CalendarError, match=outside):
        cal.decision_days(np.array([earliest - 1, int(cal.closes_ns[0])], dtype=np.int64))
    assert cal.decision_days(np.array([], dtype=np.int64)).tolist() == []


def test_date_only_and_eastern_stamps_by_hand():
    days = ["2021-11-25", "2021-03-14", "2021-11-07", "2021-07-04"]  # a holiday, both DST changes, a Sunday
    want = [ny(f"{d} 23:59:59") for d in days]
    assert [date_only_public_time(d) for d in days] == want and [date_only_public_time(dt.date.fromisoformat(d)) for d in days] == want
    assert str(date_only_public_time(days[0]).tz) == "UTC"
    assert date_only_public_ns(np.array(days, dtype="datetime64[D]")).tolist() == [w.value for w in want]
    assert eastern_to_utc("2021-11-26 13:00:00") == ny("2021-11-26 13:00") == pd.Timestamp("2021-11-26 18:00", tz="UTC")
    got = eastern_to_utc(pd.Timestamp("2021-11-26 13:00", tz="America/New_York"))
    assert got == pd.Timestamp("2021-11-26 18:00", tz="UTC") and str(got.tz) == "UTC"
    assert eastern_to_utc("2021-11-07 01:30:00") == pd.Timestamp("2021-11-07 05:30", tz="UTC")  # the repeated hour: its first (EDT) reading
    assert eastern_to_utc("2021-03-14 02:30:00") == pd.Timestamp("2021-03-14 07:00", tz="UTC")  # the skipped hour: 03:00 EDT
    assert str(eastern_to_utc("2021-11-26 13:00:00").tz) == "UTC"


def test_look_back_sessions_stop_at_the_earliest_day_and_the_calendar_start():
    assert lookback_days(cal, "2021-11-29", 3, dt.date(2021, 11, 1)) == ["2021-11-23", "2021-11-24", "2021-11-26"]
    assert lookback_days(cal, "2021-11-29", 3, dt.date(2021, 11, 24)) == ["2021-11-24", "2021-11-26"]
    assert lookback_days(cal, "2021-11-29", 0, dt.date(2021, 11, 1)) == []
    first, second = cal.sessions[0].item(), cal.sessions[1].item()
    assert lookback_days(cal, second.isoformat(), 3, first) == [first.isoformat()]
    assert cal.previous_session(second) == first and cal.previous_session(second + dt.timedelta(hours=1)) == first


def test_stamps_with_a_time_of_day_are_read_by_their_date_or_their_instant():
    """The vectorised helpers take datetime64 of any unit: a date-only item's stamp counts by its date,
    a public time by its instant (the same nanoseconds as int64)."""
    stamps = np.array(["2021-11-25T10:30", "2021-11-26T23:00"], dtype="datetime64[ns]")
    assert date_only_public_ns(stamps).tolist() == [ny("2021-11-25 23:59:59").value, ny("2021-11-26 23:59:59").value]
    assert cal.closes_for(stamps[1:]).tolist() == [CLOSE[D].value]
    instants = np.array([CLOSE[D].value, CLOSE[D].value + 1000], dtype="datetime64[ns]")
    assert cal.decision_days(instants).tolist() == [D, D_NEXT]
    assert cal.decision_close_ns(instants).tolist() == [CLOSE[D].value, CLOSE[D_NEXT].value]


def test_family_feedback_as_of_counts_the_first_day_s_bar_and_stops_at_the_calendar_end(tmp_path, monkeypatch):
    fb, seen, _ = run_feedback(tmp_path / "a", monkeypatch, [LAST.isoformat(), "2021-11-29"])  # the last bar is the first day's
    assert fb.as_of == LAST and seen == [LAST, LAST]
    fb, seen, _ = run_feedback(tmp_path / "b", monkeypatch, ["2021-11-22", "2021-11-23"], end="2021-11-24")  # bars after calendar.end
    assert fb.as_of == D_PREV and seen == [D_PREV, D_PREV]


def test_uniform_class_weights_without_a_previous_split_or_its_matured_labels(tmp_path):
    s = Settings(lake_dir=tmp_path, splits=SPLITS)
    uniform = {h: {-1: 1.0, 0: 1.0, 1: 1.0} for h in ("1D", "3D", "5D")}
    assert loop_io.weights_for(s, cal, Lake(tmp_path), "2021-11-01") == (uniform, {})  # the first split
    assert loop_io.weights_for(s, cal, Lake(tmp_path), "2022-01-03") == (uniform, {})  # no train label in the lake


def test_pending_and_unavailable_labels_never_credit_the_memory():
    """build_feedback: a label still `pending` (close(D+h) not in prices) gives no row even when its
    calendar maturity has passed; one that could not be computed gives a row that credits nothing."""
    cut = dt.date(2021, 11, 26)
    tickers = ("OK", "PENDING", "NO_HISTORY")
    out = pl.DataFrame(
        {
            "anchor_id": [f"a_{t}" for t in tickers],
            "ticker": list(tickers),
            "event_type": ["Other"] * 3,
            "horizon": ["3D"] * 3,
            "signal": [-1] * 3,
            "cited_families": [["news", "sec_filing"]] * 3,
        },
        schema_overrides={"signal": pl.Int8, "cited_families": pl.List(pl.Utf8)},
    )
    lab = pl.DataFrame(
        {
            "ticker": list(tickers),
            "horizon": ["3D"] * 3,
            "maturity_day": [cut, D_PREV, cut],
            "status": ["ok", "pending", "insufficient_history"],
            "y": [-1, -1, -1],
            "z": [-2.5, -2.5, -2.5],
        },
        schema_overrides={"y": pl.Int8},
    )
    fb = build_feedback(out, lab, pl.DataFrame(), cut, {"3D": {-1: 0.75}}, {"a_OK": "Mapped"})
    rows = {r["ticker"]: r for r in fb.iter_rows(named=True)}
    assert set(rows) == {"OK", "NO_HISTORY"}
    ok, na = rows["OK"], rows["NO_HISTORY"]
    assert (ok["label"], ok["z"], ok["correct"], ok["weight"], ok["applied"], ok["outcome"]) == (-1, -2.5, True, 0.75, True, "applied")
    assert ok["families"] == ["news", "sec_filing"] and ok["memory_event_type"] == "Mapped" and ok["maturity_day"] == cut
    assert (na["label"], na["z"], na["correct"], na["weight"], na["applied"], na["outcome"]) == (None, None, None, 0.0, False, "label_unavailable")
    assert na["memory_event_type"] == "Other" and na["label_status"] == "insufficient_history"
    assert fb.schema == empty_feedback().schema
    uncited = out.head(1).with_columns(pl.Series("cited_families", [[]], dtype=pl.List(pl.Utf8)))
    assert build_feedback(uncited, lab, pl.DataFrame(), cut, {}, {})["outcome"].to_list() == ["no_valid_citation"]
    one = build_feedback(out.head(1), lab, pl.DataFrame(), cut, {"3D": {-1: 0.75}}, {})
    assert one.height == 1 and one["outcome"].to_list() == ["applied"]
    assert build_feedback(out.head(1), lab.head(1), pl.DataFrame(), D_PREV, {}, {}).height == 0  # matures after the cut-off


def test_family_feedback_gives_each_variant_and_day_its_own_partitions(tmp_path, monkeypatch):
    """Every (variant, day) gets that day's reader outputs and contexts of that variant, the day's
    labels and anchors, its own split's weights, and its rows are written under (variant, day); a
    LoRA variant only from the first test session. Each frame is tagged with where it was read."""
    calls, written = [], []

    class Tagged(Lake):
        def read(self, table, dates=None, columns=None, **keys):
            if table == "prices":
                return super().read(table, dates=dates, columns=columns, **keys)
            tags = [f"{table}/{keys.get('variant', '-')}/{d}" for d in dates]
            return pl.DataFrame({"tag": tags, "date": [dt.date.fromisoformat(d) for d in dates]})

        def write(self, table, df, **keys):
            written.append((table, keys, df["tag"].to_list()))

    def day_feedback(s, lake_, fmap, v, frames, **k):
        assert lake_ is lake
        calls.append((v.name, {x: getattr(frames, x)["tag"].to_list() for x in ("out", "ctx", "lab", "anchors")}, k["w"], k["as_of"]))
        tag = frames.out["tag"].to_list()
        return pl.DataFrame({"tag": tag, "outcome": ["applied"] * len(tag), "correct": [v.name == "no_memory"] * len(tag)})

    monkeypatch.setattr(loop_io, "_day_feedback", day_feedback)
    monkeypatch.setattr(loop_io, "weights_for", lambda s, cal_, lake_, start: ({"from": start}, {}))
    write_bars(Lake(tmp_path))
    lake = Tagged(tmp_path)
    s = Settings(lake_dir=tmp_path, splits=SPLITS)
    variants = [Variant("no_memory", "no_memory", 0.0), Variant("lora_no_memory_s0", "lora_no_memory", 0.0, lora_seed=0)]
    days = ["2022-01-28", "2022-01-31", "2022-02-01", "2022-02-02"]  # the test split starts on 1 Feb
    fb = loop_io.family_feedback(s, lake, cal, variants, days)
    want = [("no_memory", d) for d in days] + [("lora_no_memory_s0", d) for d in days[2:]]
    got = [(v, k["out"][0].rsplit("/", 1)[1]) for v, k, _, _ in calls]
    assert sorted(got) == sorted(want)
    for v, k, w, as_of in calls:
        d = k["out"][0].rsplit("/", 1)[1]
        assert k == {"out": [f"reader_outputs/{v}/{d}"], "ctx": [f"contexts/{v}/{d}"], "lab": [f"labels/-/{d}"], "anchors": [f"anchors/-/{d}"]}
        assert w == {"from": "2022-02-01" if d >= "2022-02-01" else "2022-01-03"} and as_of == dt.date(2022, 1, 27)
    assert sorted((t, k["variant"], k["date"], tags) for t, k, tags in written) == sorted(
        ("feedback", v, d, [f"reader_outputs/{v}/{d}"]) for v, d in want
    )
    assert fb.rows == 6 and fb.outcomes == {"applied": 6} and sorted(fb.correct) == [False] * 2 + [True] * 4
    assert fb.as_of == dt.date(2022, 1, 27) and fb.families == {}
    assert fb.by_day == {"2022-01-28": 1, "2022-01-31": 1, "2022-02-01": 2, "2022-02-02": 2}  # both variants from the test split on

    # a finer family scheme: the run's note counts the passages each family got (one per call here)
    def fine_day(s, lake_, fmap, v, frames, **k):
        fmap.of[frames.out["tag"][0]] = "news:wire"
        return day_feedback(s, lake_, fmap, v, frames, **k)

    monkeypatch.setattr(loop_io, "_day_feedback", fine_day)
    fine = Settings(lake_dir=tmp_path, splits=SPLITS, memory={"families": "fine"})
    note = loop_io.family_feedback(fine, lake, cal, variants, days).families
    assert note["scheme"] == "fine" and note["passages"]["news:wire"] == 6 and sum(note["passages"].values()) == 6
    assert (note["unlisted_publisher_passages"], note["unlisted_publishers"]) == (0, {})


def test_asking_for_a_label_early_or_still_pending_is_an_error_naming_it():
    from finrag_dagster.core.labels import LabelNotMatured, matured

    def labels(rows):
        return pl.DataFrame(rows, schema=["ticker", "date", "horizon", "maturity_day", "status"], orient="row")

    ok = labels([("AAA", D_PREV, "1D", D, "ok"), ("BBB", D_PREV, "1D", D, "missing_price")])
    assert matured(ok, D).equals(ok) and matured(ok, D_NEXT).equals(ok)
    early = labels([("AAA", D_PREV, "1D", D, "ok"), ("BBB", D, "1D", D_NEXT, "pending"), ("CCC", D, "3D", dt.date(2021, 12, 1), "pending")])
    with pytest.raises(LabelNotMatured, match=r"^label BBB 2021-11-26 1D matures 2021-11-29, after 2021-11-26$"):
        matured(early, D)
    stuck = labels([("AAA", D_PREV, "1D", D, "ok"), ("BBB", D_PREV, "1D", D, "pending"), ("CCC", D_PREV, "3D", D, "pending")])
    with pytest.raises(ValueError, match=r"^label BBB 2021-11-24 1D matured on 2021-11-26 but is still pending: prices missing$"):
        matured(stuck, D)
