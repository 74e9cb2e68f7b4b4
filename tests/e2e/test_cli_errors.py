"""Every CLI command ends: bad input gives one short paragraph and a non-zero exit within seconds,
`--debug` adds the traceback, and two runs on one lake do not collide.

Each case runs the installed `finrag` command in a subprocess under a timeout, as a user would."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.pipeline.world import build_world, files_settings, short_settings

pytestmark = pytest.mark.slow
FINRAG = [sys.executable, "-m", "finrag_dagster.cli"]
TIMEOUT = 240  # generous for a loaded 2-core CI machine; a hang is what this catches


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("world_cli"))


def _config(tmp: Path, raw: Path, **sources) -> Path:
    s = short_settings(raw, tmp / "lake", variants={"families": ["no_memory"]})  # what these runs need of the pipeline
    s = s.with_overrides(sources={**s.sources.model_dump(), **sources})
    p = tmp / "settings.json"
    p.write_text(s.model_dump_json())
    return p


def _run(args: list[str], tmp: Path, **env) -> subprocess.CompletedProcess:
    e = {**os.environ, "DAGSTER_HOME": str(tmp / "home"), "FINRAG_EPHEMERAL": "1", **env}
    (tmp / "home").mkdir(exist_ok=True)
    t0 = time.monotonic()
    r = subprocess.run([*FINRAG, *args], capture_output=True, text=True, timeout=TIMEOUT, env=e, cwd=tmp)
    r.elapsed = time.monotonic() - t0  # type: ignore[attr-defined]
    return r


def _short_error(r: subprocess.CompletedProcess, *needles: str) -> str:
    assert r.returncode == 1, (r.returncode, r.stdout[-1500:], r.stderr[-1500:])
    err = r.stderr
    assert "Traceback" not in err and "Stack Trace" not in err, err[-2000:]  # no traceback without --debug
    msg = err[err.index("finrag: error") :]
    assert len(msg.splitlines()) <= 4, msg
    for n in needles:
        assert n in msg, msg
    return msg


DEMO = ["demo", "--start", "2019-02-01", "--end", "2019-02-05"]


def test_missing_news_file(raw, tmp_path):
    cfg = _config(tmp_path, raw, news=[str(tmp_path / "nowhere" / "*.csv")])
    msg = _short_error(_run([*DEMO, "--config", str(cfg)], tmp_path), "sources.news", "nowhere", "matches no file")
    assert "[sources]" in msg  # says what to do


@pytest.mark.parametrize(
    "sources, needles",
    [
        ({"news": ["{tmp}/nowhere/*.csv"]}, ("sources.news", "nowhere", "matches no file")),
        ({"universe": "{tmp}/tickers_missing.csv"}, ("sources.universe", "tickers_missing.csv")),
        ({"prices": []}, ("no price files configured",)),
    ],
    ids=["empty-glob", "missing-universe", "no-prices"],
)
def test_a_bad_source_ends_before_any_dagster_run_on_a_five_year_calendar(raw, tmp_path, sources, needles):
    """Five years of partitions: Dagster would plan every one of them before the first step read
    the missing path. The paths are checked first, so the command ends with its paragraph and
    the Dagster instance is never opened (no run, no event log in DAGSTER_HOME)."""
    s = files_settings(raw, tmp_path / "lake")
    fill = {k: ([x.format(tmp=tmp_path) for x in v] if isinstance(v, list) else v.format(tmp=tmp_path)) for k, v in sources.items()}
    s = s.with_overrides(
        sources={**s.sources.model_dump(), **fill},
        calendar={"start": "2018-01-02", "end": "2023-12-29", "decision_start": "2019-01-02"},
    )
    cfg = tmp_path / "five_years.json"
    cfg.write_text(s.model_dump_json())
    home = tmp_path / "home"
    e = {k: v for k, v in os.environ.items() if k != "FINRAG_EPHEMERAL"}
    home.mkdir()
    t0 = time.monotonic()
    r = subprocess.run(
        [*FINRAG, "demo", "--config", str(cfg)], capture_output=True, text=True, timeout=60, env={**e, "DAGSTER_HOME": str(home)}, cwd=tmp_path
    )
    elapsed = time.monotonic() - t0
    _short_error(r, *needles)
    assert sorted(p.name for p in home.iterdir()) == [], "the Dagster instance was opened before the paths were checked"
    print(f"bad source reported in {elapsed:.1f}s")


def test_end_before_start_is_a_settings_error_not_dagster_s(raw, tmp_path):
    cfg = _config(tmp_path, raw)
    msg = _short_error(_run(["demo", "--start", "2019-02-05", "--end", "2019-02-01", "--config", str(cfg)], tmp_path), "2019-02-01", "before")
    assert "Invariant" not in msg


def test_missing_price_file(raw, tmp_path):
    cfg = _config(tmp_path, raw, prices=[str(tmp_path / "prices_missing.csv")])
    _short_error(_run([*DEMO, "--config", str(cfg)], tmp_path), "prices", "prices_missing.csv")


def test_binary_filing_is_a_clear_error_or_a_quarantine_row(raw, tmp_path):
    copy = tmp_path / "raw"
    shutil.copytree(raw, copy)
    subs = sorted((copy / "sec" / "sec-edgar-filings").rglob("full-submission.txt"))
    assert subs
    subs[0].write_bytes(os.urandom(4096) + b"\x00\x01\x02" * 100)
    cfg = _config(tmp_path, copy)
    r = _run([*DEMO, "--config", str(cfg)], tmp_path)
    if r.returncode == 0:  # accepted run: the file must be in the quarantine with a reason, not dropped
        q = list((tmp_path / "lake" / "quarantine").rglob("*.parquet"))
        import polars as pl

        rows = pl.concat([pl.read_parquet(p) for p in q], how="diagonal_relaxed") if q else pl.DataFrame()
        assert rows.height and any(subs[0].parent.name in str(v) for v in rows.to_dicts()), "binary filing neither rejected nor quarantined"
    else:
        _short_error(r, subs[0].parent.name)


def test_malformed_news_csv(raw, tmp_path):
    bad = tmp_path / "bad_news.csv"
    bad.write_text('this,is,not\nan FNSPID,file\n"unterminated,quote\n')
    cfg = _config(tmp_path, raw, news=[str(bad)])
    _short_error(_run([*DEMO, "--config", str(cfg)], tmp_path), "bad_news.csv")


def test_bad_setting_names_the_key(tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text('[retrieval]\nm = "five"\n')
    r = _run(["summary", "--config", str(cfg)], tmp_path)
    _short_error(r, "retrieval.m")
    assert r.elapsed < 60


def test_debug_prints_the_traceback(raw, tmp_path):
    cfg = _config(tmp_path, raw, prices=[str(tmp_path / "prices_missing.csv")])
    r = _run(["--debug", *DEMO, "--config", str(cfg)], tmp_path)
    assert r.returncode == 1 and "Traceback" in r.stderr and "finrag: error" in r.stderr


def test_a_second_run_on_a_busy_lake_fails_at_once(raw, tmp_path):
    from filelock import FileLock

    cfg = _config(tmp_path, raw)
    (tmp_path / "lake").mkdir()
    with FileLock(str(tmp_path / "lake" / ".finrag.lock")):  # as held by a running `finrag demo`
        r = _run([*DEMO, "--config", str(cfg)], tmp_path)
    _short_error(r, "another finrag run", str(tmp_path / "lake"))


def test_two_world_builds_at_once_both_end_with_one_whole_world(tmp_path):
    cfg = tmp_path / "s.toml"
    cfg.write_text(f'lake_dir = "{tmp_path / "lake"}"\n[world]\nn_tickers = 4\nstart = 2018-06-01\nend = 2018-09-28\nnews_start = 2018-07-02\n')
    e = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    procs = [
        subprocess.Popen([*FINRAG, "world", "--config", str(cfg)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e) for _ in range(2)
    ]
    outs = [p.communicate(timeout=TIMEOUT) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    world = tmp_path / "lake" / "_world"
    manifest = json.loads((world / "truth" / "world.json").read_text())
    import hashlib

    files = manifest["files_sha256"]
    assert files and all(hashlib.sha256((world / k).read_bytes()).hexdigest() == v for k, v in files.items())
    assert not [p for p in world.iterdir() if p.name.startswith(".tmp-")]  # no temporary folder left behind
