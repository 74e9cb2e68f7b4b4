"""A residual label of (D, h) matures on the session of close(D+h) and is pending until that close
exists (docs/method.md §1, §5): its maturity day is what the feedback loop's D−1 rule reads."""

import datetime as dt

import numpy as np
import polars as pl

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.labels import compute_labels

cal = nyse()


def prices(end: str) -> pl.DataFrame:
    days = cal.sessions_in_range("2019-06-03", end)
    rng = np.random.default_rng(3)
    m = 100 * np.cumprod(1 + rng.normal(0, 0.01, len(days)))
    s = 50 * np.cumprod(1 + rng.normal(0, 0.015, len(days)))
    return pl.DataFrame({"ticker": ["AAA"] * len(days) + ["QQQ"] * len(days), "date": days + days, "adj_close": np.concatenate([s, m])})


def test_a_label_matures_on_the_session_of_close_d_plus_h():
    days = ["2020-06-25", "2020-07-01", "2020-07-02"]  # 3 July 2020 is a holiday; prices end on 7 July
    lab = compute_labels(prices("2020-07-07"), days, cal, "QQQ")
    for r in lab.iter_rows(named=True):
        d, h = r["date"], int(r["horizon"][0])
        assert r["maturity_day"] == cal.offset(d, h), (d, r["horizon"])
        assert (r["status"] == "pending") == (r["maturity_day"] > dt.date(2020, 7, 7)), (d, r["horizon"], r["status"])
    by = {(r["date"].isoformat(), r["horizon"]): r["maturity_day"] for r in lab.iter_rows(named=True)}
    assert by[("2020-07-02", "1D")] == dt.date(2020, 7, 6) and by[("2020-07-01", "3D")] == dt.date(2020, 7, 7)
    assert by[("2020-06-25", "5D")] == dt.date(2020, 7, 2)
