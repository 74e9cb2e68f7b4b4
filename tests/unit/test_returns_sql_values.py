"""The ``returns`` SQL model's values against a second implementation written here in plain Python.

finrag_dagster/dbt_like_sql/returns.sql is run through the project's own runner
(:func:`~finrag_dagster.core.storage.sqlmodels.run_model`, DuckDB) on a tiny price series, and every
window column of every row (ret_1d/3d/5d/10d/20d, vol_20d, vol_252d, n_obs_252d) is compared with
the same quantity computed below from the closes by session index: the close of session i over the
close of session i−k, and the sample standard deviation (ddof = 1) of the 1-day returns of sessions
i−19 … i (i−251 … i), skipping returns that do not exist. A window that reads a later row (a lag
of −k, ``FOLLOWING`` in a frame) changes the middle rows of a range run, so it fails here even
where a one-day run would not show it. The series holds a holiday (lags count sessions, not
calendar days) and a missing bar (no return across it, and the windows skip it).
"""

import datetime as dt
import math

import numpy as np
import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.storage import sqlmodels
from finrag_dagster.core.tables import Lake

cal = nyse()
LAGS = {"ret_1d": 1, "ret_3d": 3, "ret_5d": 5, "ret_10d": 10, "ret_20d": 20}


def write_prices(lake: Lake, days: list[dt.date], closes: dict[str, list[float | None]]) -> None:
    """One prices partition per day; a None close is a missing bar (no row)."""
    for i, d in enumerate(days):
        tickers = [t for t in closes if closes[t][i] is not None]
        n = len(tickers)
        df = pl.DataFrame(
            {
                "ticker": tickers,
                "open": [None] * n,
                "high": [None] * n,
                "low": [None] * n,
                "close": [None] * n,
                "adj_close": [closes[t][i] for t in tickers],
                "volume": [None] * n,
                "source_file": ["t"] * n,
            },
            schema_overrides={"open": pl.Float64, "high": pl.Float64, "low": pl.Float64, "close": pl.Float64, "volume": pl.Int64},
        )
        lake.write("prices", df, date=d)


def sample_std(xs: list[float]) -> float | None:
    """Sample standard deviation (ddof = 1), written out; None below two values."""
    if len(xs) < 2:
        return None
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def by_hand(c: list[float | None]) -> list[dict | None]:
    """The model's row for each session of one ticker (None where the bar is missing)."""
    r1 = [c[i] / c[i - 1] - 1 if i >= 1 and c[i] is not None and c[i - 1] is not None else None for i in range(len(c))]
    rows: list[dict | None] = []
    for i, x in enumerate(c):
        if x is None:
            rows.append(None)
            continue
        row: dict = {"adj_close": x}
        for col, k in LAGS.items():
            row[col] = x / c[i - k] - 1 if i - k >= 0 and c[i - k] is not None else None
        last20 = [r for r in r1[max(0, i - 19) : i + 1] if r is not None]
        last252 = [r for r in r1[max(0, i - 251) : i + 1] if r is not None]
        row.update(vol_20d=sample_std(last20), vol_252d=sample_std(last252), n_obs_252d=len(last252))
        rows.append(row)
    return rows


def assert_rows_equal(got: dict, want: dict, where: str) -> None:
    for col, v in want.items():
        if v is None:
            assert got[col] is None, f"{where} {col}: {got[col]} where no value exists"
        elif col == "n_obs_252d":
            assert got[col] == v, f"{where} {col}"
        else:
            assert got[col] is not None and got[col] == pytest.approx(v, rel=1e-9, abs=1e-15), f"{where} {col}: {got[col]} != {v}"


def check_all(lake: Lake, days: list[dt.date], closes: dict[str, list[float | None]], out_days: list[dt.date]) -> int:
    """Every row of ``out_days`` equals the hand computation; returns the rows checked."""
    want = {t: by_hand(c) for t, c in closes.items()}
    got = lake.read("returns", dates=out_days)
    n = 0
    for d in out_days:
        i = days.index(d)
        part = got.filter(pl.col("date") == d)
        expected = {t for t in closes if want[t][i] is not None}
        assert set(part["ticker"]) == expected, f"{d}: tickers"
        for r in part.iter_rows(named=True):
            assert_rows_equal(r, want[r["ticker"]][i], f"{r['ticker']} {d}")
            n += 1
    return n


@pytest.fixture
def world(tmp_path):
    """30 sessions around Thanksgiving 2021 (no session on 25 Nov), two tickers with unsmooth
    closes, AAA's bar of 2021-12-01 missing."""
    days = cal.sessions_in_range("2021-11-09", "2021-12-21")
    assert len(days) == 30 and dt.date(2021, 11, 25) not in days
    rng = np.random.default_rng(7)
    a: list[float | None] = list(100 * np.cumprod(1 + rng.normal(0, 0.02, len(days))))
    q: list[float | None] = list(300 * np.cumprod(1 + rng.normal(0, 0.01, len(days))))
    a[days.index(dt.date(2021, 12, 1))] = None
    closes = {"AAA": a, "QQQ": q}
    lake = Lake(tmp_path)
    write_prices(lake, days, closes)
    return lake, days, closes


def test_every_window_column_of_a_range_run_equals_the_hand_computation(world):
    lake, days, closes = world
    model = sqlmodels.load_model(sqlmodels.SQL_DIR / "returns.sql")
    counts = sqlmodels.run_model(model, lake, cal, days)
    assert counts == {d.isoformat(): 2 - (d == dt.date(2021, 12, 1)) for d in days}
    assert check_all(lake, days, closes, days) == 59
    # a row in the middle whose every window would move if a later bar were read (spelled out)
    a = closes["AAA"]
    i = days.index(dt.date(2021, 11, 30))  # session 14; 2021-11-26 is 2 sessions back, the holiday is no session
    r = lake.read("returns", dates=[days[i]]).filter(pl.col("ticker") == "AAA").row(0, named=True)
    assert r["ret_3d"] == pytest.approx(a[i] / a[days.index(dt.date(2021, 11, 24))] - 1, rel=1e-12)
    assert r["ret_10d"] == pytest.approx(a[i] / a[days.index(dt.date(2021, 11, 15))] - 1, rel=1e-12)
    assert r["ret_20d"] is None and r["n_obs_252d"] == i
    daily = np.array(a[1 : i + 1], dtype=float) / np.array(a[:i], dtype=float) - 1
    assert r["vol_252d"] == pytest.approx(np.std(daily, ddof=1), rel=1e-9)
    # the missing bar: no row that day, no 1-day return the next session, the windows skip both
    nxt = lake.read("returns", dates=[dt.date(2021, 12, 2)]).filter(pl.col("ticker") == "AAA").row(0, named=True)
    assert nxt["ret_1d"] is None and nxt["ret_3d"] is not None and nxt["n_obs_252d"] == days.index(dt.date(2021, 12, 2)) - 2


def test_single_day_runs_read_the_history_before_them(world):
    lake, days, closes = world
    model = sqlmodels.load_model(sqlmodels.SQL_DIR / "returns.sql")
    for d in (days[0], days[12], days[-1]):
        sqlmodels.run_model(model, lake, cal, [d])
        assert check_all(lake, days, closes, [d]) == 2


def test_the_252_session_window_drops_its_oldest_return(tmp_path):
    """Over 256 sessions the volatility window holds exactly the last 252 one-day returns."""
    days = cal.sessions_in_range("2020-12-01", "2021-12-31")[:256]
    rng = np.random.default_rng(3)
    q = list(50 * np.cumprod(1 + rng.normal(0, 0.015, len(days))))
    q[0] = 5.0  # a huge first return: any window reaching it is far off
    closes = {"QQQ": q}
    lake = Lake(tmp_path)
    write_prices(lake, days, closes)
    model = sqlmodels.load_model(sqlmodels.SQL_DIR / "returns.sql")
    tail = days[-6:]
    sqlmodels.run_model(model, lake, cal, tail)
    assert check_all(lake, days, closes, tail) == 6
    got = lake.read("returns", dates=tail)["n_obs_252d"].to_list()
    assert got == [250, 251, 252, 252, 252, 252]
