"""The SQL models (finrag_dagster/dbt_like_sql): upstream tables come from the SQL; models write declared, partitioned tables."""

import datetime as dt

import numpy as np
import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.storage.sqlmodels import SQL_DIR, SqlModelError, load_model, run_model, upstream_tables
from finrag_dagster.core.tables import Lake


def test_upstream_tables_come_from_the_parse_tree():
    sql = "WITH a AS (SELECT * FROM prices) SELECT * FROM a JOIN anchors b USING (x) JOIN trading_sessions s ON true"
    assert upstream_tables(sql) == ("anchors", "prices")


def test_header_is_required(tmp_path):
    p = tmp_path / "bad.sql"
    p.write_text("-- name: bad\nSELECT 1")
    with pytest.raises(SqlModelError, match="columns"):
        load_model(p)


def _prices(lake: Lake, days, closes: dict[str, list[float]]):
    for i, d in enumerate(days):
        df = pl.DataFrame(
            {
                "ticker": list(closes),
                "open": [None] * len(closes),
                "high": [None] * len(closes),
                "low": [None] * len(closes),
                "close": [None] * len(closes),
                "adj_close": [closes[t][i] for t in closes],
                "volume": [None] * len(closes),
                "source_file": ["t"] * len(closes),
            },
            schema_overrides={"open": pl.Float64, "high": pl.Float64, "low": pl.Float64, "close": pl.Float64, "volume": pl.Int64},
        )
        lake.write("prices", df, date=d)


def test_returns_model_is_backward_looking_and_skips_gaps(tmp_path):
    cal = nyse()
    lake = Lake(tmp_path)
    days = cal.sessions_in_range("2021-01-04", "2021-03-31")
    n = len(days)
    rng = np.random.default_rng(0)
    a = list(100 * np.cumprod(1 + rng.normal(0, 0.01, n)))
    q = list(300 * np.cumprod(1 + rng.normal(0, 0.01, n)))
    _prices(lake, days, {"AAA": a, "QQQ": q})
    # a missing bar: delete AAA's 2021-02-01 row
    d_gap = dt.date(2021, 2, 1)
    p = lake.read("prices", dates=[d_gap]).filter(pl.col("ticker") != "AAA").drop("date")
    lake.write("prices", p, date=d_gap)
    model = load_model(SQL_DIR / "returns.sql")
    assert model.upstream == ("prices",)
    out_days = cal.sessions_in_range("2021-03-01", "2021-03-31")
    counts = run_model(model, lake, cal, out_days)
    assert set(counts) == {d.isoformat() for d in out_days}
    r = lake.read("returns", dates=[dt.date(2021, 3, 10)]).filter(pl.col("ticker") == "AAA").row(0, named=True)
    i = days.index(dt.date(2021, 3, 10))
    assert r["ret_1d"] == pytest.approx(a[i] / a[i - 1] - 1, rel=1e-12)
    assert r["ret_20d"] == pytest.approx(a[i] / a[i - 20] - 1, rel=1e-12)
    daily = np.array(a[i - 19 : i + 1]) / np.array(a[i - 20 : i]) - 1
    assert r["vol_20d"] == pytest.approx(np.std(daily, ddof=1), rel=1e-9)
    # the day after the gap has no 1-day return (its previous session bar is missing)
    run_model(model, lake, cal, [dt.date(2021, 2, 2)])
    r2 = lake.read("returns", dates=[dt.date(2021, 2, 2)]).filter(pl.col("ticker") == "AAA").row(0, named=True)
    assert r2["ret_1d"] is None
    # changing a later price changes no earlier row
    before = lake.read("returns", dates=[dt.date(2021, 3, 10)])
    _prices(lake, days[-3:], {"AAA": [1.0, 2.0, 3.0], "QQQ": [1.0, 2.0, 3.0]})
    run_model(model, lake, cal, [dt.date(2021, 3, 10)])
    assert lake.read("returns", dates=[dt.date(2021, 3, 10)]).equals(before)
