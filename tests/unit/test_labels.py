"""Residual labels: vectorised RollingOLS equals per-window statsmodels.OLS to 1e-10; maturity rules."""

import datetime as dt

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.labels import LabelNotMatured, compute_labels, matured
from finrag_dagster.core.settings import LabelSettings

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
    lab = compute_labels(prices, days, cal, MARKET, params=LabelSettings(window=252, gap=20, min_obs=120), horizons=(h,))
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


def oracle(prices, ticker, day, h, window, gap, min_obs, z_threshold):
    """One label row worked out straight from docs/method.md §5, session by session: the status
    first (pending, insufficient_history, missing_price, ok), then eqs 1-3 with statsmodels.OLS."""
    k = cal.session_index(day)
    px = {(r["ticker"], r["date"]): r["adj_close"] for r in prices.iter_rows(named=True)}
    last_market = max(d for t, d in px if t == MARKET)
    d1 = cal.offset(day, h)
    row = dict(date=day, ticker=ticker, horizon=f"{h}D", maturity_day=d1, n_obs=0, R=None, Rm=None, alpha=None, beta=None)
    row.update(sigma=None, epsilon=None, z=None, y=None)
    win_days = [cal.sessions[i].item() for i in range(k - gap - window + 1, k - gap + 1)]  # the window ends on D-gap
    ys, xs = [], []
    for a in range(len(win_days) - h):
        t0, t1 = win_days[a], win_days[a + h]
        if all(key in px for key in ((ticker, t0), (ticker, t1), (MARKET, t0), (MARKET, t1))):
            ys.append(px[(ticker, t1)] / px[(ticker, t0)] - 1)
            xs.append(px[(MARKET, t1)] / px[(MARKET, t0)] - 1)
    row["n_obs"] = len(ys)
    if d1 > last_market:
        return {**row, "status": "pending"}
    if len(ys) < max(min_obs, 3):
        return {**row, "status": "insufficient_history"}
    if not all(key in px for key in ((ticker, day), (ticker, d1), (MARKET, day), (MARKET, d1))):
        return {**row, "status": "missing_price"}
    fit = sm.OLS(np.array(ys), sm.add_constant(np.array(xs))).fit()
    a, b = fit.params
    sigma = np.sqrt(fit.ssr / (fit.nobs - 2))
    R = px[(ticker, d1)] / px[(ticker, day)] - 1
    Rm = px[(MARKET, d1)] / px[(MARKET, day)] - 1
    eps = R - (a + b * Rm)
    z = eps / sigma
    y = 1 if z > z_threshold else -1 if z < -z_threshold else 0
    return {**row, "status": "ok", "R": R, "Rm": Rm, "alpha": a, "beta": b, "sigma": sigma, "epsilon": eps, "z": z, "y": y}


def test_every_label_row_equals_the_oracle_on_a_small_window():
    """Every column of every row, each status included: a window of 12 sessions ending 2 sessions
    before D, at least 6 observations, and a panel with holes in the ticker's and the market's
    closes, a day inside the window, the day D+h and the last sessions (pending)."""
    p = dict(window=12, gap=2, min_obs=6, z_threshold=0.5)
    days = [d.isoformat() for d in cal.sessions_in_range("2019-03-01", "2019-03-29")]
    at = lambda i: cal.offset("2019-03-01", i)  # noqa: E731
    drop = {("AAA", at(i)) for i in (-13, -12, -11, -10, -9, -8, -7, 3, 9)} | {("QQQ", at(12)), ("BBB", at(5))}
    prices = make_prices(start="2018-12-03", end="2019-04-02", seed=4, drop=drop)
    prices = prices.filter(~pl.struct("ticker", "date").map_elements(lambda r: (r["ticker"], r["date"]) in drop, return_dtype=pl.Boolean))
    lab = compute_labels(prices, days, cal, MARKET, params=LabelSettings(**p))
    assert lab.columns == ["date", "ticker", "horizon", "maturity_day", "status", "n_obs", "R", "Rm", "alpha", "beta", "sigma", "epsilon", "z", "y"]
    assert lab.schema["n_obs"] == pl.Int32 and lab.schema["y"] == pl.Int8 and lab.schema["R"] == pl.Float64
    seen = set()
    for got in lab.iter_rows(named=True):
        want = oracle(prices, got["ticker"], got["date"], int(got["horizon"][:-1]), **p)
        seen.add(want["status"])
        for key, w in want.items():
            if isinstance(w, float):
                assert got[key] == pytest.approx(w, rel=1e-9, abs=1e-12), (got, key)
            else:
                assert got[key] == w, (got, key)
    assert seen == {"ok", "pending", "insufficient_history", "missing_price"}
    assert set(lab.filter(pl.col("status") == "ok")["y"]) == {-1, 0, 1}


def test_labels_need_the_market_proxy_and_the_window_before_the_first_day():
    prices = make_prices(start="2019-01-02", end="2019-06-28")
    with pytest.raises(ValueError, match="^labels need the market proxy SPY in prices$"):
        compute_labels(prices, ["2019-06-03"], cal, "SPY", params=LabelSettings(window=10, gap=2, min_obs=5))
    first = cal.sessions[0].item()
    with pytest.raises(ValueError, match="^labels need a calendar with the estimation window before the first day$"):
        compute_labels(prices, [cal.offset(first, 10).isoformat()], cal, MARKET, params=LabelSettings(window=10, gap=2, min_obs=5))
    # the first day whose panel (window + gap - 1 sessions before D) starts on the calendar's first session is computed
    assert compute_labels(prices, [cal.offset(first, 11).isoformat()], cal, MARKET, params=LabelSettings(window=10, gap=2, min_obs=5)).height


def test_defaults_are_the_settings_defaults():
    """compute_labels without params uses [labels]' defaults: 252 sessions ending 20 before D, 120 observations."""
    prices = make_prices()
    d = "2020-01-15"
    lab = compute_labels(prices, [d], cal, MARKET, tickers=["AAA"], horizons=(1,))
    assert lab["ticker"].to_list() == ["AAA"]  # the tickers asked for, not every ticker in prices
    got = lab.row(0, named=True)
    want = oracle(prices, "AAA", dt.date.fromisoformat(d), 1, window=252, gap=20, min_obs=120, z_threshold=1.0)
    assert got["n_obs"] == want["n_obs"] == 251 and got["alpha"] == pytest.approx(want["alpha"], rel=1e-9)
    assert got["y"] == want["y"] and got["z"] == pytest.approx(want["z"], rel=1e-9)


def test_a_market_without_a_bar_in_the_panel_leaves_every_label_pending():
    prices = make_prices(start="2019-01-02", end="2019-06-28")
    early = prices.filter((pl.col("ticker") != MARKET) | (pl.col("date") < dt.date(2019, 2, 1)))  # the proxy's bars end long before
    lab = compute_labels(early, ["2019-06-03"], cal, MARKET, params=LabelSettings(window=10, gap=2, min_obs=5), horizons=(1, 2))
    assert set(lab["status"]) == {"pending"} and lab["horizon"].to_list() == ["1D", "1D", "2D", "2D"]
    tiny = compute_labels(early, ["2019-06-03"], cal, MARKET, params=LabelSettings(window=1, gap=0, min_obs=2), horizons=(1,))
    assert set(tiny["status"]) == {"pending"}  # the first panel row, one session ahead: still no market bar


def test_window_market_model_by_hand():
    """Windows that end before the series has a full window, or past its end, give NaN and 0
    observations; a window of exactly ``window`` rows, and of exactly ``min_obs`` valid rows, is fitted;
    an empty window (every row missing) is NaN without a numpy warning."""
    import warnings

    from finrag_dagster.core.labels import window_market_model

    rm = np.array([0.01, -0.02, 0.03, 0.00, 0.02, -0.01])
    r = 0.001 + 1.5 * rm + np.array([0.002, -0.001, 0.0, 0.003, -0.002, 0.001])
    ends = np.array([-1, 1, 2, 5, 6])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a, b, s, n = window_market_model(r, rm, ends, window=3, min_obs=3)
        empty = window_market_model(np.full(6, np.nan), rm, np.array([5]), window=3, min_obs=3)
        a1, _, _, n1 = window_market_model(r[:3], rm[:3], np.array([2]), window=3, min_obs=3)  # the series is one window
        a2, _, _, n2 = window_market_model(r, rm, np.array([5]), window=2, min_obs=2)  # 2 observations: an exact fit
        rng = np.random.default_rng(0)  # closes whose 2-point fit leaves a residual of rounding size: x / 0 degrees of freedom
        rm3 = rng.normal(0, 0.02, 6)
        window_market_model(0.001 + 1.5 * rm3 + rng.normal(0, 0.003, 6), rm3, np.array([5]), window=2, min_obs=2)
    assert n.tolist() == [0, 0, 3, 3, 0] and n.dtype == np.int64
    for w, e in ((2, 2), (3, 5)):
        fit = sm.OLS(r[e - 2 : e + 1], sm.add_constant(rm[e - 2 : e + 1])).fit()
        assert (a[w], b[w], s[w]) == pytest.approx((fit.params[0], fit.params[1], np.sqrt(fit.ssr)), rel=1e-9)  # ddof 2: 3 - 2 = 1
    assert np.isnan(a[[0, 1, 4]]).all() and np.isnan(b[[0, 1, 4]]).all() and np.isnan(s[[0, 1, 4]]).all()
    assert np.isnan(empty[0]).all() and empty[3].tolist() == [0]
    assert n1.tolist() == [3] and a1[0] == pytest.approx(a[2])
    assert n2.tolist() == [2] and np.isnan(a2[0])


def test_small_windows_count_their_observations_and_need_three():
    prices = make_prices(start="2019-01-02", end="2019-06-28")
    d = "2019-05-01"

    def one(window, h, min_obs=2):
        lab = compute_labels(prices, [d], cal, MARKET, tickers=["AAA"], params=LabelSettings(window=window, gap=0, min_obs=min_obs), horizons=(h,))
        return lab.row(0, named=True)

    assert (one(2, 1)["n_obs"], one(2, 1)["status"]) == (1, "insufficient_history")  # a window of 2 closes: 1 return
    assert (one(2, 3)["n_obs"], one(2, 3)["status"]) == (0, "insufficient_history")  # shorter than the horizon
    assert (one(3, 1)["n_obs"], one(3, 1)["status"]) == (2, "insufficient_history")  # 2 >= min_obs, but eq. 1 needs 3
    ok = one(4, 1, min_obs=3)
    assert (ok["n_obs"], ok["status"]) == (3, "ok")  # exactly min_obs


def test_y_is_zero_at_the_threshold_itself():
    """Eq. 3: y = 1 only when z > threshold, -1 only when z < -threshold (values exact in binary)."""
    from finrag_dagster.core.labels import _label_status, _LabelPanel

    def status(p0, p1):
        P = np.array([[p0, 4.0], [p1, 4.0]])  # the market is flat: Rm = 0
        pn = _LabelPanel(lo=0, names=["AAA", MARKET], P=P, m=1, mk=P[:, 1], last_market=1)
        alpha = 0.125 if p1 > p0 else -0.125
        return _label_status(pn, 0, 0, 1, (alpha, 1.0, 0.25, 10, 5), min_obs=5, z_threshold=0.5)[1]

    up, down = status(8.0, 10.0), status(16.0, 12.0)  # R = 0.25 and -0.25: z = 0.5 and -0.5
    assert (up["z"], up["y"], up["R"], up["Rm"]) == (0.5, 0, 0.25, 0.0)
    assert (down["z"], down["y"]) == (-0.5, 0)


def test_the_calendars_last_session_has_no_maturity_day():
    end = cal.sessions[-1].item()
    days = [cal.offset(end, -2), end]
    rng = np.random.default_rng(1)
    rows = [(t, d, float(50 + rng.normal())) for t in ("AAA", MARKET) for d in cal.sessions_in_range(cal.offset(end, -40), end)]
    prices = pl.DataFrame(rows, schema={"ticker": pl.Utf8, "date": pl.Date, "adj_close": pl.Float64}, orient="row")
    lab = compute_labels(prices, [d.isoformat() for d in days], cal, MARKET, params=LabelSettings(window=10, gap=2, min_obs=5), horizons=(1, 3))
    got = {(r["date"], r["horizon"]): (r["maturity_day"], r["status"]) for r in lab.iter_rows(named=True)}
    assert got[(days[0], "1D")] == (cal.offset(end, -1), "ok") and got[(days[0], "3D")] == (None, "pending")
    assert got[(end, "1D")] == (None, "pending") and got[(end, "3D")] == (None, "pending")
