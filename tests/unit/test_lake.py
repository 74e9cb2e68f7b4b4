"""The parquet lake: declared schemas, atomic writes, same rows -> same bytes, DuckDB over hive."""

import datetime as dt

import polars as pl
import pyarrow.parquet as pq
import pytest

from finrag_dagster.core.storage import lake as lake_mod
from finrag_dagster.core.storage.lake import SchemaError, file_digest
from finrag_dagster.core.tables import Lake


def prices(rows):
    return pl.DataFrame(
        rows,
        schema={
            "ticker": pl.Utf8,
            "open": pl.Float64,
            "high": pl.Float64,
            "low": pl.Float64,
            "close": pl.Float64,
            "adj_close": pl.Float64,
            "volume": pl.Int64,
            "source_file": pl.Utf8,
        },
        orient="row",
    )


ROWS = [("MSFT", 1.0, 2.0, 0.5, 1.5, 1.4, 10, "f.csv"), ("AAPL", 3.0, 4.0, 2.5, 3.5, 3.4, 20, "f.csv")]


def test_path_layout_is_hive(tmp_path):
    lk = Lake(tmp_path)
    assert lk.path("prices", date="2021-03-03") == tmp_path.resolve() / "prices" / "date=2021-03-03" / "part-0.parquet"
    assert lk.path("quarantine", source_table="news_raw").parent.name == "source_table=news_raw"
    with pytest.raises(ValueError):
        lk.path("prices")


def test_same_rows_in_any_order_give_the_same_bytes(tmp_path):
    lk = Lake(tmp_path)
    p, _ = lk.write("prices", prices(ROWS), date="2021-03-03")
    h1 = file_digest(p)
    lk.write("prices", prices(ROWS[::-1]), date="2021-03-03")
    assert file_digest(p) == h1
    assert pq.read_table(p).column("ticker").to_pylist() == ["AAPL", "MSFT"]  # sorted by declared key
    assert pq.read_schema(p).metadata is None or b"pandas" not in pq.read_schema(p).metadata


def test_schema_is_checked_on_write(tmp_path):
    lk = Lake(tmp_path)
    with pytest.raises(SchemaError, match="missing columns"):
        lk.write("prices", prices(ROWS).drop("volume"), date="2021-03-03")
    with pytest.raises(SchemaError, match="unexpected columns"):
        lk.write("prices", prices(ROWS).with_columns(pl.lit(1).alias("extra")), date="2021-03-03")
    with pytest.raises(SchemaError, match="null"):
        lk.write("prices", prices([("X", 1.0, 1.0, 1.0, 1.0, None, 1, "f")]), date="2021-03-03")
    with pytest.raises(SchemaError, match="cannot cast"):
        lk.write("prices", prices(ROWS).with_columns(pl.lit("abc").alias("volume")), date="2021-03-03")
    assert not lk.exists("prices", date="2021-03-03")


def test_a_crash_mid_write_leaves_the_previous_version(tmp_path, monkeypatch):
    lk = Lake(tmp_path)
    p, _ = lk.write("prices", prices(ROWS), date="2021-03-03")
    before = file_digest(p)

    def boom(table, where, **kw):
        where.write(b"PAR1 torn")  # partial bytes reach the temp file, then the process dies
        raise KeyboardInterrupt("simulated crash")

    monkeypatch.setattr(lake_mod.pq, "write_table", boom)
    with pytest.raises(KeyboardInterrupt):
        lk.write("prices", prices(ROWS[:1]), date="2021-03-03")
    assert file_digest(p) == before
    assert [f.name for f in p.parent.iterdir()] == ["part-0.parquet"]  # no temp file left behind


def test_write_partitions_writes_empty_days_and_refuses_strays(tmp_path):
    lk = Lake(tmp_path)
    df = prices(ROWS).with_columns(pl.lit(dt.date(2021, 3, 3)).alias("date"))
    counts = lk.write_partitions("prices", df, ["2021-03-03", "2021-03-04"])
    assert counts == {"2021-03-03": 2, "2021-03-04": 0}
    assert lk.read("prices", dates=["2021-03-04"]).height == 0
    with pytest.raises(ValueError, match="outside the requested"):
        lk.write_partitions("prices", df, ["2021-03-04"])


def test_duckdb_reads_every_partition_with_hive_keys(tmp_path):
    lk = Lake(tmp_path)
    for day in ("2021-03-03", "2021-03-04"):
        lk.write("prices", prices(ROWS), date=day)
    con = lk.duckdb()
    rows = con.execute("SELECT date, count(*) FROM prices GROUP BY date ORDER BY date").fetchall()
    assert rows == [(dt.date(2021, 3, 3), 2), (dt.date(2021, 3, 4), 2)]
    # a table with no files is still an (empty) view with its declared columns
    empty = lk.duckdb(tables=["anchors"])
    assert empty.execute("SELECT count(*) FROM anchors").fetchone() == (0,)
    assert "event_type" in [r[0] for r in empty.execute("DESCRIBE anchors").fetchall()]


def test_read_restores_date_and_range(tmp_path):
    lk = Lake(tmp_path)
    for day in ("2021-03-03", "2021-03-04", "2021-03-05"):
        lk.write("prices", prices(ROWS), date=day)
    df = lk.read_range("prices", "2021-03-04", "2021-03-05")
    assert df["date"].dtype == pl.Date
    assert sorted(set(df["date"].to_list())) == [dt.date(2021, 3, 4), dt.date(2021, 3, 5)]
    assert lk.materialized_dates("prices") == ["2021-03-03", "2021-03-04", "2021-03-05"]
