"""The Dagster instance on PostgreSQL (deploy/postgres/dagster.yaml): a PostgreSQL server started
here on 127.0.0.1, `finrag demo` over two weeks with DAGSTER_HOME holding that file, and the runs
and materialisations read back, through Dagster and straight from the database."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import dagster as dg
import pytest

pytestmark = [pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
CONFIG = """
lake_dir = "{lake}"
[world]
seed = 11
n_tickers = 6
n_sectors = 3
start = 2018-07-02
end = 2019-03-29
news_start = 2018-11-01
[calendar]
start = 2018-07-02
end = 2019-03-29
decision_start = 2019-02-04
[variants]
families = ["no_memory", "source_memory"]
[splits]
train = [2019-01-01, 2019-01-31]
validation = [2019-02-04, 2019-02-08]
test = [2019-02-11, 2019-03-29]
"""


def _pg_bin() -> Path:
    for cand in [shutil.which("pg_ctl"), *sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), reverse=True)]:
        if cand and (Path(cand).resolve().parent / "initdb").exists() and (Path(cand).resolve().parent / "createdb").exists():
            return Path(cand).resolve().parent  # /usr/local/bin may hold links to a few of them only
    msg = "PostgreSQL's server binaries (initdb, pg_ctl) are not installed: apt-get install postgresql"
    if os.environ.get("CI"):
        pytest.fail(msg)  # .ci/run installs them: in CI their absence is a failure, not a skip
    pytest.skip(msg)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def postgres():
    """A throw-away PostgreSQL cluster on 127.0.0.1 (run as the `postgres` user when we are root:
    the server refuses to run as root, so its folder is outside pytest's root-only tmp folder).
    Yields the SQLAlchemy URL of database `dagster`."""
    bindir, port = _pg_bin(), _free_port()
    root = Path(tempfile.mkdtemp(prefix="finrag-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data = root / "data"

    def run(cmd: list[str]) -> None:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, f"{' '.join(cmd)}: {out.stdout[-1500:]}{out.stderr[-1500:]}"

    try:
        run([*as_user, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "finrag"])
        run(
            [
                *as_user,
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(root / "log"),
                "-w",
                "-t",
                "60",
                "start",
                "-o",
                f"-p {port} -k {root} -c listen_addresses=127.0.0.1",
            ]
        )
        run([str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "finrag", "dagster"])
        yield f"postgresql+psycopg2://finrag@127.0.0.1:{port}/dagster"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)


def test_demo_runs_are_recorded_in_postgres(postgres, tmp_path):
    import sqlalchemy as sa

    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(ROOT / "deploy" / "postgres" / "dagster.yaml", home / "dagster.yaml")
    cfg = tmp_path / "pg.toml"
    cfg.write_text(CONFIG.format(lake=tmp_path / "lake"))
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "FINRAG_PG_URL": postgres,
        "FINRAG_CONFIG": str(cfg),
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    env.pop("FINRAG_EPHEMERAL", None)
    out = subprocess.run(
        [sys.executable, "-m", "finrag_dagster.cli", "demo", "--start", "2019-02-04", "--end", "2019-02-15"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert not list(home.glob("*.db")) and not (home / "history").exists(), "the demo wrote a SQLite instance beside Postgres"

    os.environ["FINRAG_PG_URL"] = postgres
    try:
        with dg.DagsterInstance.from_config(str(home)) as inst:
            assert type(inst.run_storage).__name__ == "PostgresRunStorage"
            assert type(inst.event_log_storage).__name__ == "PostgresEventLogStorage"
            runs = inst.get_runs()
            assert len(runs) >= 6 and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), [(r.run_id[:8], r.status) for r in runs]
            anchors = inst.get_materialized_partitions(dg.AssetKey("anchors"))
            assert {"2019-02-04", "2019-02-15"} <= anchors and len(anchors) == 10
            assert inst.get_latest_materialization_event(dg.AssetKey("report")) is not None
    finally:
        os.environ.pop("FINRAG_PG_URL", None)
    with sa.create_engine(postgres).connect() as con:
        n_runs = con.execute(sa.text("select count(*) from runs where status = 'SUCCESS'")).scalar()
        n_mat = con.execute(
            sa.text("select count(*) from event_logs where dagster_event_type = 'ASSET_MATERIALIZATION' and asset_key like '%anchors%'")
        ).scalar()
    assert n_runs == len(runs) and n_mat >= 10
