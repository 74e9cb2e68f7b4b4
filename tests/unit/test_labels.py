"""Residual labels: vectorised RollingOLS equals per-window statsmodels.OLS to 1e-10; maturity rules."""

import datetime as dt

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.labels import LabelNotMatured, compute_labels, matured

cal = nyse()
MARKET = "QQQ"


def make_prices(start="2018-01-02", end="2020-06-30", seed=0, drop=()):
    rng = np.random.default_rng(seed)
    days = cal.sessions_in_range(start, end)
    m = 100 * np.cumprod(1 + rng.normal(0.0004, 0.012, len(days)))
    rows = []
    for t, beta in (("AAA", 1.3), ("BBB", 0.7)):
        idio = rng.normal(0, 0.015, len(days))
        s = 50 * np.cumprod(1 + beta * (m / np.roll(m, 1) - 1) * (np.arange(len(days)) > 0) + idio)
        rows += [(t, d, float(p)) for d, p in zip(days, s) if (t, d) not in drop]
    rows += [(MARKET, d, float(p)) for d, p in zip(days, m)]
    return pl.DataFrame(rows, schema={"ticker": pl.Utf8, "date": pl.Date, "adj_close": pl.Float64}, orient="row")


def reference(prices, ticker, day, h, window=252, gap=20):
    """Straight from docs/method.md §5 with a per-window statsmodels.OLS."""
    k = cal.session_index(day)
    win_days = [cal.sessions[i].item() for i in range(k - 271, k - 19)]
    assert len(win_days) == window
    px = {(r["ticker"], r["date"]): r["adj_close"] for r in prices.iter_rows(named=True)}
    ys, xs = [], []
    for a in range(len(win_days) - h):
        t0, t1 = win_days[a], win_days[a + h]
        if (ticker, t0) in px and (ticker, t1) in px:
            ys.append(px[(ticker, t1)] / px[(ticker, t0)] - 1)
            xs.append(px[(MARKET, t1)] / px[(MARKET, t0)] - 1)
    fit = sm.OLS(np.array(ys), sm.add_constant(np.array(xs))).fit()
    d1 = cal.offset(day, h)
    R = px[(ticker, d1)] / px[(ticker, day)] - 1
    Rm = px[(MARKET, d1)] / px[(MARKET, day)] - 1
    sigma = np.sqrt(fit.ssr / (fit.nobs - 2))
    eps = R - (fit.params[0] + fit.params[1] * Rm)
    return fit.params[0], fit.params[1], sigma, eps, eps / sigma, int(fit.nobs)


@pytest.mark.parametrize("h", [1, 3, 5])
def test_vectorised_labels_equal_per_window_ols(h):
    drop = {("AAA", cal.offset(dt.date(2019, 9, 3), i)) for i in range(0, 40, 3)}  # scattered gaps
    prices = make_prices(drop=drop)
    days = [d.isoformat() for d in cal.sessions_in_range("2019-12-02", "2020-01-31")]
    lab = compute_labels(prices, days, cal, MARKET, window=252, gap=20, min_obs=120, horizons=(h,))
    for d in days[::7]:
        for t in ("AAA", "BBB"):
            row = lab.filter((pl.col("date") == dt.date.fromisoformat(d)) & (pl.col("ticker") == t)).row(0, named=True)
            if row["status"] == "missing_price":
                continue
            a, b, s, e, z, n = reference(prices, t, dt.date.fromisoformat(d), h)
            assert row["status"] == "ok" and row["n_obs"] == n
            for got, want in ((row["alpha"], a), (row["beta"], b), (row["sigma"], s), (row["epsilon"], e), (row["z"], z)):
                assert abs(got - want) <= 1e-10 * max(1.0, abs(want))
            assert row["y"] == (1 if z > 1 else -1 if z < -1 else 0)


def test_pending_until_close_d_plus_h_exists_and_asking_early_fails():
    prices = make_prices(end="2020-01-10")
    days = ["2020-01-06", "2020-01-08"]
    lab = compute_labels(prices, days, cal, MARKET)
    st = {(r["date"].isoformat(), r["horizon"]): r["status"] for r in lab.filter(pl.col("ticker") == "AAA").iter_rows(named=True)}
    assert st[("2020-01-06", "1D")] == "ok" and st[("2020-01-06", "3D")] == "ok" and st[("2020-01-06", "5D")] == "pending"
    assert st[("2020-01-08", "1D")] == "ok" and st[("2020-01-08", "3D")] == "pending"
    pend = lab.filter(pl.col("status") == "pending")
    assert pend["z"].null_count() == pend.height
    with pytest.raises(LabelNotMatured):
        matured(lab.filter(pl.col("date") == dt.date(2020, 1, 8)), as_of_day=dt.date(2020, 1, 9))
    ok = lab.filter((pl.col("date") == dt.date(2020, 1, 6)) & (pl.col("horizon") == "1D"))
    assert matured(ok, as_of_day=dt.date(2020, 1, 7)).height == 2


def test_insufficient_history_is_excluded_not_guessed():
    prices = make_prices(start="2019-09-03", end="2020-03-31")  # ~85 observations before the window end
    lab = compute_labels(prices, ["2020-02-03"], cal, MARKET)
    assert set(lab["status"]) == {"insufficient_history"}
    assert lab["y"].null_count() == lab.height


def test_a_label_does_not_depend_on_which_other_days_a_run_computes():
    """Byte-for-byte: a range run, a one-day run, and a run whose prices end at close(D+h) give the
    same label rows (no sums carried over from other windows)."""
    prices = make_prices()
    days = [d.isoformat() for d in cal.sessions_in_range("2019-10-01", "2019-12-31")]
    ranged = compute_labels(prices, days, cal, MARKET)
    for d in days[::11]:
        single = compute_labels(prices, [d], cal, MARKET)
        assert ranged.filter(pl.col("date") == dt.date.fromisoformat(d)).equals(single), d
        short = prices.filter(pl.col("date") <= cal.offset(d, 5))  # the last bar this day's labels need
        assert compute_labels(short, [d], cal, MARKET).equals(single), d
