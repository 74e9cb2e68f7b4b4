"""The lake on object storage (docs/cluster.md): a real S3 API (moto's server on 127.0.0.1) holds the
same layout and bytes as a local folder, DuckDB reads it, and a crash never leaves a torn partition."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from finrag_dagster.core.settings import Settings, load_settings, with_lake
from finrag_dagster.core.storage.lake import SchemaError, table_digests
from finrag_dagster.core.storage.schemas import TableSpec
from finrag_dagster.core.tables import Lake, open_lake

pytest.importorskip("moto")

SPEC = TableSpec(
    "ticks",
    pa.schema([pa.field("id", pa.int64(), False), pa.field("ticker", pa.string(), False), pa.field("x", pa.float64(), True)]),
    ("date",),
    ("ticker", "id"),
)
FLAT = TableSpec("flags", pa.schema([pa.field("k", pa.string(), False)]), ("source_table",), ("k",))
CATALOG = {SPEC.name: SPEC, FLAT.name: FLAT}
DAYS = ["2019-01-02", "2019-01-03", "2019-01-04"]


def _rows(n: int, seed: int = 0) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": list(range(n)),
            "ticker": [("AAPL", "MSFT", "NVDA")[(i + seed) % 3] for i in range(n)],
            "x": [float(i * 7 + seed) if i % 5 else None for i in range(n)],
            "date": [dt.date.fromisoformat(DAYS[i % 2]) for i in range(n)],
        }
    )


def _fill(lake: Lake) -> None:
    lake.write_partitions("ticks", _rows(50), DAYS)
    lake.write("flags", pl.DataFrame({"k": ["b", "a"]}), source_table="news_raw")


def test_an_s3_lake_holds_the_local_lakes_layout_and_bytes(s3_env, tmp_path):
    local = Lake(tmp_path / "local", CATALOG)
    remote = Lake(f"s3://{s3_env.bucket()}/lake/v1", CATALOG)
    assert remote.remote and not local.remote and remote.work != local.work
    for lake in (local, remote):
        _fill(lake)
    assert table_digests(remote, "ticks") == table_digests(local, "ticks")
    assert table_digests(remote, "flags") == table_digests(local, "flags")
    assert len(table_digests(remote, "ticks")) == 3  # the empty third day is a partition too
    assert remote.materialized_dates("ticks") == local.materialized_dates("ticks") == DAYS
    assert remote.read("ticks").equals(local.read("ticks"))
    assert remote.read("ticks", dates=[DAYS[1]], columns=["id"]).equals(local.read("ticks", dates=[DAYS[1]], columns=["id"]))
    assert remote.exists("ticks", date=DAYS[0]) and not remote.exists("ticks", date="2019-01-07")
    assert remote.has_table("ticks") and not remote.has_table("labels")
    assert remote.location("ticks").startswith("s3://") and remote.url(remote.path("ticks", date=DAYS[0])).endswith("date=2019-01-02/part-0.parquet")


def test_duckdb_reads_an_s3_lake_as_it_reads_a_local_one(s3_env, tmp_path):
    local = Lake(tmp_path / "local", CATALOG)
    remote = Lake(f"s3://{s3_env.bucket()}/lake", CATALOG)
    for lake in (local, remote):
        _fill(lake)
    sql = "SELECT date, ticker, count(*) n, sum(x) sx FROM ticks WHERE date >= DATE '2019-01-03' GROUP BY ALL ORDER BY ALL"
    want = local.duckdb(tables=["ticks"]).execute(sql).fetchall()
    assert want and remote.duckdb(tables=["ticks"]).execute(sql).fetchall() == want
    assert [r[0] for r in remote.duckdb().execute("SELECT source_table, k FROM flags ORDER BY k").fetchall()] == ["news_raw", "news_raw"]
    # a table with no partitions yet still binds, with its declared columns
    empty = Lake(f"s3://{s3_env.bucket()}/lake", CATALOG).duckdb(tables=["ticks"])
    assert empty.execute("SELECT count(*) FROM ticks").fetchone() == (0,)


def test_an_unchanged_partition_is_not_uploaded_again_and_a_stale_one_can_be_deleted(s3_env):
    lake = Lake(f"s3://{s3_env.bucket()}/lake", CATALOG)
    lake.write_partitions("ticks", _rows(20), DAYS)
    lake.write_partitions("ticks", _rows(20), DAYS, keep_same=True)
    assert {str(p) for p in lake.unchanged} == {str(lake.path("ticks", date=d)) for d in DAYS}
    lake.unchanged.clear()
    lake.write_partitions("ticks", _rows(20, seed=1), DAYS, keep_same=True)
    assert str(lake.path("ticks", date=DAYS[2])) in {str(p) for p in lake.unchanged}  # still empty
    assert str(lake.path("ticks", date=DAYS[0])) not in {str(p) for p in lake.unchanged}
    lake.delete(lake.path("ticks", date=DAYS[2]))
    assert lake.materialized_dates("ticks") == DAYS[:2]


def test_a_failed_write_leaves_the_previous_object(s3_env):
    lake = Lake(f"s3://{s3_env.bucket()}/lake", CATALOG)
    lake.write_partitions("ticks", _rows(30), DAYS)
    before = table_digests(lake, "ticks")
    with pytest.raises(SchemaError):
        lake.write_partitions("ticks", _rows(30).with_columns(pl.lit(None, dtype=pl.Utf8).alias("ticker")), DAYS)
    assert table_digests(lake, "ticks") == before


def test_a_process_killed_mid_upload_leaves_the_previous_object(s3_env):
    """The lake sends a partition as one upload and the store publishes an object only when that
    upload completes: a writer killed after sending part of a large (multipart) partition leaves
    the old bytes in place, never a torn partition."""
    uri = f"s3://{s3_env.bucket()}/lake"
    lake = Lake(uri, CATALOG)
    lake.write_partitions("ticks", _rows(10), DAYS)
    before = table_digests(lake, "ticks")
    child = textwrap.dedent(
        f"""
        import datetime as dt, os
        import numpy as np, polars as pl, pyarrow as pa
        from finrag_dagster.core.tables import Lake
        from finrag_dagster.core.storage.schemas import TableSpec

        spec = TableSpec("ticks", pa.schema([pa.field("id", pa.int64(), False), pa.field("ticker", pa.string(), False),
                                             pa.field("x", pa.float64(), True)]), ("date",), ("ticker", "id"))
        lake = Lake({uri!r}, {{"ticks": spec}})
        real = lake.fs

        class KilledMidUpload:  # the real file system, but the writer dies half-way through its upload
            def __getattr__(self, name):
                return getattr(real, name)

            def open_output_stream(self, path, **kw):
                out = real.open_output_stream(path, **kw)

                class Half:
                    def __enter__(self):
                        return self

                    def __exit__(self, *exc):
                        out.close()

                    def write(self, data):
                        assert len(data) > 11 * 2**20, len(data)  # more than one 10 MiB part: a multipart upload
                        out.write(data[: len(data) // 2])
                        out.flush()
                        print("killed after", len(data) // 2, "of", len(data), "bytes", flush=True)
                        os._exit(9)

                return Half()

        lake.fs = KilledMidUpload()
        n = 1_600_000
        big = pl.DataFrame({{"id": np.arange(n), "ticker": ["AAPL"] * n, "x": np.random.default_rng(0).standard_normal(n),
                            "date": [dt.date(2019, 1, 2)] * n}})
        lake.write_partitions("ticks", big, ["2019-01-02"])
        """
    )
    done = subprocess.run([sys.executable, "-c", child], timeout=300, capture_output=True, text=True)
    assert done.returncode == 9 and "killed after" in done.stdout, done.stderr[-2000:]
    assert table_digests(lake, "ticks") == before
    assert lake.read("ticks", dates=[DAYS[0]]).height == 5


def test_settings_put_the_tables_on_the_uri_and_the_working_files_on_local_disk(s3_env, tmp_path, monkeypatch):
    uri = f"s3://{s3_env.bucket()}/prefix"
    s = Settings(lake_dir=uri)
    assert s.lake_uri == uri and Path(s.lake_dir).is_absolute() and str(tmp_path / "cache") in str(s.lake_dir)
    lake = open_lake(s)
    assert lake.remote and lake.uri == uri and lake.work == Path(s.lake_dir)
    assert Settings.model_validate_json(s.model_dump_json()) == s  # a settings round trip keeps both
    cfg = tmp_path / "finrag.toml"
    cfg.write_text(f'lake_dir = "{uri}/"\n')
    assert load_settings(cfg).lake_uri == uri  # not taken for a folder relative to the file
    monkeypatch.setenv("FINRAG_LAKE", uri)
    assert load_settings(None).lake_uri == uri
    back = with_lake(s, tmp_path / "here")
    assert back.lake_uri == "" and back.lake_dir == (tmp_path / "here").resolve() and not open_lake(back).remote


def test_an_unreachable_or_unknown_store_fails_clearly(tmp_path):
    with pytest.raises(ValueError, match="cannot open the lake"):
        Lake("nosuchscheme://bucket/prefix", CATALOG)
