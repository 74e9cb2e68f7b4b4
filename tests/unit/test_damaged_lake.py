"""A damaged lake file and a killed run: every read names the file and says what to do, `finrag status`
says so, and the write that replaces a damaged file says it did (docs/bad_inputs.md, the lake)."""

import datetime as dt
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from typer.testing import CliRunner

from finrag_dagster.cli.errors import explain
from finrag_dagster.cli.main import app, killed_runs
from finrag_dagster.core.settings import Settings
from finrag_dagster.core.status import lake_status
from finrag_dagster.core.storage.lake import TMP_PREFIX, DamagedLakeFile
from finrag_dagster.core.tables import Lake
from finrag_dagster.pipeline import HOST_TAG, PID_TAG, run_range
from tests.instance import pooled_instance

REPO = Path(__file__).resolve().parents[2]
DAYS = ("2021-03-03", "2021-03-04")
COLS = {"ticker": pl.Utf8, "open": pl.Float64, "high": pl.Float64, "low": pl.Float64, "close": pl.Float64, "adj_close": pl.Float64}


def squash(text: str) -> str:
    """Text without whitespace: rich wraps a long path anywhere, at any console width."""
    return "".join(text.split())


def _bars(n: int = 2) -> pl.DataFrame:
    rows = [(t, 1.0, 2.0, 0.5, 1.5, 1.4) for t in ("QQQ", "AAPL", "MSFT")[:n]]
    return pl.DataFrame(rows, schema=COLS, orient="row").with_columns(pl.lit(10).alias("volume"), pl.lit("f.csv").alias("source_file"))


def _lake(tmp_path: Path) -> Lake:
    lake = Lake(tmp_path / "lake")
    for d in DAYS:
        lake.write("prices", _bars(), date=d)
    return lake


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a copy cut short: the footer is gone


# ---------------------------------------------------------------- a damaged file
def test_every_read_of_a_truncated_partition_names_the_file_and_what_to_do(tmp_path):
    lake = _lake(tmp_path)
    bad = lake.path("prices", date=DAYS[1])
    _truncate(bad)
    for read in (lambda: lake.read("prices"), lambda: lake.read("prices", dates=[DAYS[1]]), lambda: lake.read_schema(bad)):
        with pytest.raises(DamagedLakeFile) as e:
            read()
        msg = str(e.value)
        assert msg.startswith(f"damaged lake file {bad}: its end is missing (")
        assert f"Re-materialise the partition date={DAYS[1]} of table prices" in msg
        assert f"--partition {DAYS[1]}" in msg and "magic bytes" not in msg and len(msg) < 600
    assert lake.read("prices", dates=[DAYS[0]]).height == 2  # the other partition still reads


def test_a_file_that_is_not_parquet_at_all_is_named_too(tmp_path):
    lake = _lake(tmp_path)
    bad = lake.path("prices", date=DAYS[0])
    bad.write_text("<html>503 Service Unavailable</html>" * 3)
    with pytest.raises(DamagedLakeFile, match="it does not start as a parquet file does"):
        lake.read("prices")
    assert [(t, Path(f), why[:14]) for t, f, why in lake.damaged_files()] == [("prices", bad, "it does not st")]


def test_a_sql_model_over_a_damaged_file_names_it_not_duckdb(tmp_path):
    from finrag_dagster.core.calendar import nyse
    from finrag_dagster.core.storage import sqlmodels

    lake = _lake(tmp_path)
    model = sqlmodels.load_model(sqlmodels.SQL_DIR / "returns.sql")
    days = [dt.date.fromisoformat(d) for d in DAYS]
    assert sqlmodels.run_model(model, lake, nyse(), days)  # the clean lake computes
    _truncate(lake.path("prices", date=DAYS[0]))
    with pytest.raises(DamagedLakeFile) as e:
        sqlmodels.run_model(model, lake, nyse(), days)
    assert str(e.value).startswith(f"damaged lake file {lake.path('prices', date=DAYS[0])}: its end is missing")
    assert f"Re-materialise the partition date={DAYS[0]} of table prices" in str(e.value)


def test_status_names_the_damaged_file_and_still_reports_the_rest(tmp_path):
    lake = _lake(tmp_path)
    _truncate(lake.path("prices", date=DAYS[1]))
    st = lake_status(lake, "QQQ", [])
    (d,) = st.damaged
    assert (d["table"], d["file"]) == ("prices", str(lake.path("prices", date=DAYS[1])))
    assert d["message"].startswith("damaged lake file") and "Re-materialise" in d["message"]
    assert st.last_market_day == DAYS[0]  # the damaged day is skipped, not a crash
    assert st.interrupted_writes == []
    res = CliRunner().invoke(app, ["status", "--lake", str(lake.root)], env={"COLUMNS": "200", "DAGSTER_HOME": str(tmp_path / "none")})
    assert res.exit_code == 0, res.output
    assert squash(d["message"]) in squash(res.output)


def test_the_write_that_replaces_a_damaged_file_says_so(tmp_path, caplog):
    lake = _lake(tmp_path)
    clean = lake.path("prices", date=DAYS[0]).read_bytes()
    bad = lake.path("prices", date=DAYS[1])
    _truncate(bad)
    with caplog.at_level(logging.WARNING, logger="dagster.builtin.finrag.lake"):
        lake.write("prices", _bars(), keep_same=True, date=DAYS[1])
        lake.write("prices", _bars(), keep_same=True, date=DAYS[0])  # whole and the same: left alone, nothing said
    assert lake.replaced_damaged == [str(bad)]
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [f"replaced a damaged lake file {bad}"]
    assert bad.read_bytes() == clean and lake.damaged_files() == []  # the same rows give the same bytes as before


def test_a_run_reading_a_damaged_file_fails_naming_it_and_the_run_rewriting_it_says_so(tmp_path):
    """Through the Dagster assets: `prices` reads the universe; with its file cut short the run fails with
    the lake's paragraph (not pyarrow's traceback); re-materialising `universe` logs the replacement."""
    (tmp_path / "tickers.csv").write_text("ticker,Security\nAAA,Aaa Corp\nQQQ,QQQ\n")
    (tmp_path / "prices").mkdir()
    rows = "\n".join(f"{d},10,11,9,10,10,100" for d in ("2019-01-02", "2019-01-03", "2019-01-04"))
    for t in ("aaa", "qqq"):
        (tmp_path / "prices" / f"{t}.csv").write_text("Date,Open,High,Low,Close,Adj Close,Volume\n" + rows + "\n")
    s = Settings(
        lake_dir=tmp_path / "lake",
        sources={"kind": "files", "universe": str(tmp_path / "tickers.csv"), "prices": [str(tmp_path / "prices" / "*.csv")]},
        calendar={"start": dt.date(2019, 1, 2), "end": dt.date(2019, 1, 4), "decision_start": dt.date(2019, 1, 2)},
    )
    with pooled_instance() as inst:
        run_range(s, end=dt.date(2019, 1, 4), instance=inst, only=["universe"])
        bad = Lake(tmp_path / "lake").path("universe")
        _truncate(bad)
        with pytest.raises(Exception) as e:
            run_range(s, end=dt.date(2019, 1, 4), instance=inst, only=["prices"])
        msg = explain(e.value).message
        assert f"damaged lake file {bad}: its end is missing" in msg and "Re-materialise the table universe" in msg
        (res,) = run_range(s, end=dt.date(2019, 1, 4), instance=inst, only=["universe"])
        logs = [ev.message for ev in inst.all_logs(res.run_id) if ev.level >= logging.WARNING]
        assert any(f"replaced a damaged lake file {bad}" in m for m in logs), logs
    assert Lake(tmp_path / "lake").damaged_files() == []


# ---------------------------------------------------------------- a killed run
KILLED_WRITER = textwrap.dedent("""
    import sys, time, pathlib
    import pyarrow.parquet as pq
    import polars as pl
    from finrag_dagster.core.storage import lake as L
    from finrag_dagster.core.tables import Lake

    lake, marker = Lake(sys.argv[1]), pathlib.Path(sys.argv[2])

    def slow_write(table, where, **kw):  # the real atomic write, stopped half-way through its bytes
        where.write(b"PAR1" + b"\\0" * 4096)
        where.flush()
        marker.write_text("writing")
        time.sleep(120)

    L.pq.write_table = slow_write
    df = pl.read_parquet(sys.argv[3])
    lake.write("prices", df, date=sys.argv[4])
""")


def test_a_writer_killed_mid_write_leaves_a_temp_file_that_status_reports(tmp_path, monkeypatch):
    """A real process is killed (SIGKILL) inside the lake's atomic write: the partition keeps its
    previous bytes, a ``.tmp-*`` file is left beside it, and `finrag status` says a run was killed."""
    lake = _lake(tmp_path)
    before = lake.path("prices", date=DAYS[1]).read_bytes()
    new = tmp_path / "new.parquet"
    _bars(3).write_parquet(new)
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(lake.root), str(marker), str(new), DAYS[1]], env=env)
    try:
        deadline = time.time() + 60
        while not marker.exists():
            assert proc.poll() is None and time.time() < deadline, "the writer never started"
            time.sleep(0.1)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    part = lake.path("prices", date=DAYS[1])
    (tmp,) = sorted(part.parent.glob(f"{TMP_PREFIX}*"))  # what a kill leaves: the write never reached os.replace
    assert part.read_bytes() == before and lake.damaged_files() == []
    st = lake_status(lake, "QQQ", [])
    assert st.interrupted_writes == [str(tmp)]
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "no_instance"))
    res = CliRunner().invoke(app, ["status", "--lake", str(lake.root)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    out = squash(res.output)
    assert squash(f"unfinished writes: 1 temporary file(s) beside lake partitions, e.g. {tmp}") in out
    assert squash("a run was killed mid-write") in out


def test_status_says_a_run_was_killed_when_its_process_is_gone(tmp_path, monkeypatch):
    """A run left STARTED by a finrag process that no longer exists (the state a SIGKILL leaves:
    tests/unit/test_orphaned_runs.py kills a real one) is reported, read only; a live one is not."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(timeout=60)
    host = {HOST_TAG: socket.gethostname()}
    with dg.DagsterInstance.from_config(str(home)) as inst:
        gone = dg.DagsterRun(job_name="__ASSET_JOB", tags={PID_TAG: str(dead.pid), **host}, status=dg.DagsterRunStatus.STARTED)
        live = dg.DagsterRun(job_name="__ASSET_JOB", tags={PID_TAG: str(os.getpid()), **host}, status=dg.DagsterRunStatus.STARTED)
        inst.add_run(gone)
        inst.add_run(live)
    assert killed_runs() == [{"run_id": gone.run_id, "status": "STARTED", "pid": dead.pid}]
    lake = _lake(tmp_path)
    res = CliRunner().invoke(app, ["status", "--lake", str(lake.root)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert squash(f"run killed: run {gone.run_id[:8]} is STARTED but its finrag process (pid {dead.pid}) is gone") in squash(res.output)
    with dg.DagsterInstance.from_config(str(home)) as inst:  # status only reads
        assert inst.get_run_by_id(gone.run_id).status == dg.DagsterRunStatus.STARTED
    empty = tmp_path / "empty"  # killed before it wrote a table: status still says so, then why it cannot go on
    empty.mkdir()
    res = CliRunner().invoke(app, ["status", "--lake", str(empty)], env={"COLUMNS": "200"})
    assert res.exit_code == 1 and squash(f"run killed: run {gone.run_id[:8]}") in squash(res.output)


def test_status_reads_the_shipped_instance_without_dagster_home_set(tmp_path, monkeypatch):
    """The shipped dagster.yaml names its storage by $DAGSTER_HOME: `finrag status` run from a checkout
    without the variable still opens ./.dagster_home (it stopped with DagsterInvalidConfigError)."""
    home = tmp_path / ".dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPO / ".dagster_home" / "dagster.yaml").read_text())
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert killed_runs() == []
    res = CliRunner().invoke(app, ["status", "--lake", str(_lake(tmp_path).root)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
