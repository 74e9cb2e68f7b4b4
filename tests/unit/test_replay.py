"""`finrag replay`: items land only once public, exactly as the loaders read the full source."""

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

from finrag_dagster.core.calendar import date_only_public_time, nyse
from finrag_dagster.core.settings import WorldSettings, load_settings
from finrag_dagster.sources import replay as R
from finrag_dagster.sources.edgar import load_filings
from finrag_dagster.sources.news import NewsClock, load_news
from finrag_dagster.sources.prices import load_prices
from finrag_dagster.sources.registry import load_table, load_universe_frame, source_paths
from finrag_dagster.sources.synthetic import generate_world
from finrag_dagster.sources.universe import load_universe

cal = nyse()
UTC = dt.timezone.utc
# 3 tickers + QQQ, news from 2018-11: a few hundred news rows, ~40 filings
TINY = WorldSettings(seed=11, n_tickers=3, n_sectors=2, start=dt.date(2018, 6, 1), end=dt.date(2019, 4, 30), news_start=dt.date(2018, 11, 1))
D0, D1 = dt.date(2019, 1, 28), dt.date(2019, 2, 22)  # the replay window of most tests (4 weeks)
ROOT = Path(__file__).resolve().parents[2]
CLOCK = NewsClock(dates_only=False)  # the world's stamps are generated true: replay and load them timed


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> Path:
    return generate_world(TINY, tmp_path_factory.mktemp("replay") / "world").raw_dir


@pytest.fixture(scope="module")
def index(raw):
    return R.index_source(raw, news_clock=CLOCK)


def _loaded(root: Path):
    """The three raw tables as the loaders read a folder with the world's layout."""
    uni = load_universe(root / "universe" / "tickers.csv")
    tickers = set(uni["ticker"].to_list())
    news = load_news([str(root / "news" / "*.csv")], tickers, clock=CLOCK)
    prices = load_prices([str(root / "prices" / "*.csv")], tickers)
    sec = root / "sec" / "sec-edgar-filings"
    filings = load_filings([str(root / "sec" / "submissions" / "*.json"), str(sec)], [str(sec)], uni)
    return news, prices, filings


@pytest.fixture(scope="module")
def full(raw):
    return _loaded(raw)


def _ts(t) -> pd.Timestamp:
    return pd.Timestamp(t).tz_convert("UTC")


def _upto(df: pl.DataFrame, col: str, t: pd.Timestamp) -> pl.DataFrame:
    return df.filter(pl.col(col) <= t.to_pydatetime())


def _same(a: pl.DataFrame, b: pl.DataFrame, key: list[str], drop=("source_row",)) -> None:
    a = a.drop([c for c in drop if c in a.columns]).sort(key)
    b = b.drop([c for c in drop if c in b.columns]).sort(key)
    assert a.height == b.height, (a.height, b.height)
    assert a.equals(b), "landing rows differ from the source rows public by then"


def _check_cut(landing: Path, full, t: pd.Timestamp) -> tuple[int, int, int]:
    """Loaders on the landing folder == loaders on the source, rows with public time <= t."""
    news, prices, filings = _loaded(landing)
    f_news, f_prices, f_filings = full
    # (1a) nothing in the landing is public after t (the loaders' own public times)
    if news.accepted.height:
        assert news.accepted["public_time"].max() <= t.to_pydatetime()
    if filings.accepted.height:
        assert filings.accepted["public_time"].max() <= t.to_pydatetime()
    # (2) no bar of D before close(D)
    if prices.accepted.height:
        closes = cal.closes_for(prices.accepted["date"].to_numpy().astype("datetime64[D]"))
        assert closes.max() <= t.value
    # (1b) and everything public by t is there, exactly as the source's loader reads it
    _same(news.accepted, _upto(f_news.accepted, "public_time", t), ["news_id"])
    src_bars = f_prices.accepted.filter(pl.Series(cal.closes_for(f_prices.accepted["date"].to_numpy().astype("datetime64[D]")) <= t.value))
    _same(prices.accepted, src_bars, ["ticker", "date"])
    _same(filings.accepted, _upto(f_filings.accepted, "public_time", t), ["accession"], drop=())
    assert news.quarantine.height == prices.quarantine.height == filings.quarantine.height == 0
    return news.accepted.height, prices.accepted.height, filings.accepted.height


def test_released_rows_are_exactly_the_source_rows_public_by_then(raw, index, full, tmp_path):
    """(1) after release_until(T) the loaders see exactly the source's rows with public_time <= T."""
    f_news, f_prices, f_filings = full
    in_window = lambda df: df.filter(  # noqa: E731
        (pl.col("public_time") > R.start_of(D0).to_pydatetime()) & (pl.col("public_time") < _ts(f"{D1}T23:00Z").to_pydatetime())
    )
    date_only = in_window(f_news.accepted.filter(pl.col("time_precision") == "date"))["public_time"][0]
    timed = in_window(f_news.accepted.filter(pl.col("time_precision") == "second"))["public_time"][0]
    filing = in_window(f_filings.accepted)["public_time"][0]
    assert date_only == date_only_public_time(date_only.astimezone(dt.timezone(dt.timedelta(hours=-5))).date())
    one_s = pd.Timedelta(seconds=1)
    cuts = {R.start_of(D0), cal.close_time(D0) - one_s, cal.close_time(D0), cal.open_time(dt.date(2019, 2, 5))}
    for t in (date_only, timed, filing):
        cuts |= {_ts(t) - one_s, _ts(t)}  # just before and exactly at a public time
    seen = []
    for t in sorted(cuts):
        st = R.release_until(raw, tmp_path, t, news_clock=CLOCK)
        assert st.now == t
        seen.append(_check_cut(tmp_path, full, t))
        # the clock file says where the replay stands
        clock = R.read_clock(tmp_path)
        assert _ts(clock["now"]) == t
        lcs = clock["last_closed_session"]
        assert lcs is not None and cal.close_time(lcs) <= t < cal.close_time(cal.next_session(lcs))
    # the boundary items arrived exactly at their public time, not a second earlier
    assert all(b >= a for a, b in zip(seen, seen[1:]))
    for t in (date_only, timed, filing):
        i = sorted(cuts).index(_ts(t))
        assert sum(seen[i]) > sum(seen[i - 1])
    # the release log holds one line per released item, each public by its release
    lines = [json.loads(x) for x in (tmp_path / "_replay" / "releases.jsonl").read_text().splitlines()]
    assert len({(x["kind"], x["key"]) for x in lines}) == len(lines) == sum(seen[-1])
    assert all(_ts(x["public_time"]) <= _ts(x["released_at_replay_time"]) for x in lines)


def test_news_public_time_is_the_loaders(tmp_path):
    """Date-only stamps at 23:59:59 New York, offsets and ' UTC' honoured, bad stamps never released."""
    csv = (
        "Date,Article_title,Stock_symbol,Url,Publisher,Author,Article,Lsa_summary,Luhn_summary,Textrank_summary,Lexrank_summary\n"
        '2021-03-01 00:00:00+00:00,a,AAA,u1,p,au,"multi\nline, ""quoted""",,,,\n'
        "2021-03-01 14:05:00-05:00,b,AAA,u2,p,au,x,,,,\n"
        "2020-06-05 06:30:54 UTC,c,AAA,u3,p,au,x,,,,\n"
        "\n"
        "not a date,d,AAA,u4,p,au,x,,,,\n"
        "2021-07-02,e,AAA,u5,p,au,x,,,,\n"
        "2021-03-02 23:59:59+00:00,f,AAA,u6,p,au,x,,,,"
    )
    (tmp_path / "news").mkdir()
    (tmp_path / "news" / "n.csv").write_text(csv)
    for dates_only in (False, True):
        ix = R.index_source(tmp_path, news_clock=NewsClock(dates_only=dates_only))
        (src,) = ix.news
        loaded = load_news([tmp_path / "news" / "n.csv"], {"AAA"}, dates_only=dates_only).accepted
        want = dict(zip(loaded["source_row"].to_list(), loaded["public_time"].to_list()))
        got = {int(r): int(p) for r, p in zip(src.rows, src.public) if p != R.NEVER}
        assert got == {r: pd.Timestamp(t).value for r, t in want.items()}
        assert set(range(7)) - set(got) == {3, 4}  # the blank line and the bad stamp
    # the 00:00 UTC stamp is public at 23:59:59 New York of that date, not at midnight
    ix = R.index_source(tmp_path)
    assert int(ix.news[0].public[list(ix.news[0].rows).index(0)]) == date_only_public_time("2021-03-01").value
    assert ix.unreleasable["news"] == 2


def test_no_bar_before_its_close_step_by_step(raw, index, tmp_path):
    """(2) stepping through sessions (an early close among them), a bar of D appears at close(D)."""
    rp = R.Replayer(raw, tmp_path, index=index, news_clock=CLOCK)
    tickers = set(load_universe(raw / "universe" / "tickers.csv")["ticker"].to_list())
    steps = 0
    for st, _ in rp.step_through("2018-11-20", "2018-11-27"):  # 2018-11-23 closes at 13:00 New York
        bars = load_prices([str(tmp_path / "prices" / "*.csv")], tickers).accepted
        last = bars["date"].max()
        closes = cal.closes_for(bars["date"].to_numpy().astype("datetime64[D]"))
        assert closes.max() <= st.time.value, f"a bar after its close at {st}"
        if st.phase == "close":
            assert last == st.session and bars.filter(pl.col("date") == st.session).height == len(tickers)
        elif st.phase != "start":
            assert last < st.session
        steps += 1
        if st.session == dt.date(2018, 11, 23) and st.phase == "close":  # early close: 13:00 + 5 min
            assert st.time == cal.close_time(st.session) + pd.Timedelta(minutes=5)
    assert steps == 1 + 4 * 5 + 3  # start; 5 steps a normal session; pre-open, 11:30, close on 11-23
    early = cal.close_time(dt.date(2018, 11, 23))
    assert early.tz_convert("America/New_York").hour == 13
    # just before / at the early close, with a fresh landing
    other = tmp_path / "other"
    R.release_until(raw, other, early - pd.Timedelta(microseconds=1), news_clock=CLOCK)
    assert "2018-11-23" not in (other / "prices" / "qqq.csv").read_text()
    R.release_until(raw, other, early, news_clock=CLOCK)
    assert "2018-11-23" in (other / "prices" / "qqq.csv").read_text()


def _block(doc: dict) -> dict:
    return doc["filings"]["recent"]


def test_submissions_json_stays_aligned(raw, index, tmp_path):
    """(3) the JSON holds the accepted filings only, every array filtered with the same index."""
    t = _ts("2019-02-08T21:05:00Z")
    R.release_until(raw, tmp_path, t, news_clock=CLOCK)
    released = {it.key for it in index.filings if it.public <= t.value}
    assert 0 < len(released) < len(index.filings)
    n_checked = 0
    for src_path in sorted((raw / "sec" / "submissions").glob("*.json")):
        src = json.loads(src_path.read_text())
        got = json.loads((tmp_path / "sec" / "submissions" / src_path.name).read_text())
        sb, gb = _block(src), _block(got)
        n = len(sb["accessionNumber"])
        keep = [i for i, a in enumerate(sb["accessionNumber"]) if a in released]
        assert set(gb) == set(sb)
        for k, v in sb.items():
            if isinstance(v, list) and len(v) == n:
                assert gb[k] == [v[i] for i in keep], k  # same length, same rows, same order
        assert {k: v for k, v in got.items() if k != "filings"} == {k: v for k, v in src.items() if k != "filings"}
        for i, acc in enumerate(sb["accessionNumber"]):
            txt = list((tmp_path / "sec" / "sec-edgar-filings").glob(f"*/*/{acc}/full-submission.txt"))
            assert bool(txt) == (acc in released)
            # the JSON entry and the full submission arrive together, after the later acceptance time
            if acc in released:
                assert _ts(sb["acceptanceDateTime"][i]) <= t
                n_checked += 1
    assert n_checked == len(released)
    # at the end of the world every JSON and full submission is the source's, byte for byte
    R.release_until(raw, tmp_path, "2020-01-01T00:00:00Z", news_clock=CLOCK)
    for p in (raw / "sec").rglob("*"):
        if p.is_file():
            assert (tmp_path / p.relative_to(raw)).read_bytes() == p.read_bytes(), p


def test_filing_waits_for_the_later_acceptance_time(raw, tmp_path):
    """JSON and SGML acceptance times disagree: the filing lands at the later one, as the loader merges."""
    import shutil

    src = shutil.copytree(raw, tmp_path / "raw")
    js = sorted((src / "sec" / "submissions").glob("*.json"))[0]
    doc = json.loads(js.read_text())
    block = _block(doc)
    i = next(k for k, a in enumerate(block["acceptanceDateTime"]) if "2019-02" in a)
    acc = block["accessionNumber"][i]
    header_t = _ts(block["acceptanceDateTime"][i])
    later = header_t + pd.Timedelta(hours=30)  # the JSON says a day later: a different decision day
    block["acceptanceDateTime"][i] = later.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    block["filingDate"][i] = later.tz_convert("America/New_York").strftime("%Y-%m-%d")  # consistent with its own date
    js.write_text(json.dumps(doc))
    full = _loaded(src)
    assert _upto(full[2].accepted, "public_time", later).filter(pl.col("accession") == acc)["public_time"][0] == later
    landing = tmp_path / "landing"
    for t in (header_t, later - pd.Timedelta(seconds=1), later):
        R.release_until(src, landing, t, news_clock=CLOCK)
        _check_cut(landing, full, t)
        there = bool(list((landing / "sec" / "sec-edgar-filings").glob(f"*/*/{acc}/full-submission.txt")))
        listed = acc in _block(json.loads((landing / "sec" / "submissions" / js.name).read_text()))["accessionNumber"]
        assert there == listed == (t >= later)


def _landing_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and "_replay" not in p.parts}


def _log(root: Path) -> list[tuple]:
    lines = [json.loads(x) for x in (root / "_replay" / "releases.jsonl").read_text().splitlines()]
    return [(x["kind"], x["key"], x["public_time"], x["released_at_replay_time"]) for x in lines]


def test_resume_gives_the_same_landing_as_one_run(raw, index, tmp_path, monkeypatch):
    """(4) stop, crash mid-step, resume: same bytes and same release log as one uninterrupted run."""
    a, b = tmp_path / "a", tmp_path / "b"
    R.Replayer(raw, a, index=index, news_clock=CLOCK).run(D0, D1)
    # b: stopped after a week...
    rb = R.Replayer(raw, b, index=index, news_clock=CLOCK)
    for st, _ in rb.step_through(D0, D1):
        if st.session == dt.date(2019, 2, 4) and st.phase == "intraday":
            break
    # ...then a step whose files were written but whose clock was never saved (a crash)
    monkeypatch.setattr(R.Replayer, "_save_clock", lambda self, now: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        rb.release_until(cal.close_time(dt.date(2019, 2, 6)) + pd.Timedelta(minutes=5))
    monkeypatch.undo()
    assert R.read_clock(b)["now"] < cal.close_time(dt.date(2019, 2, 5)).isoformat()
    # resume with a fresh process-like replayer (new index, read from the clock file)
    reports = R.Replayer(raw, b, news_clock=CLOCK).run(D0, D1)
    assert reports[0].session == dt.date(2019, 2, 4) and reports[-1].session == D1
    assert _landing_files(a) == _landing_files(b)
    assert _log(a) == _log(b)
    assert len(set(_log(b))) == len(_log(b))  # nothing released twice
    ca, cb = R.read_clock(a), R.read_clock(b)
    assert ca["now"] == cb["now"] == (cal.close_time(D1) + pd.Timedelta(minutes=5)).isoformat()
    assert ca["last_closed_session"] == cb["last_closed_session"] == D1.isoformat()
    assert ca["released"] == cb["released"]
    # a third run over the same window has nothing left to do
    assert R.Replayer(raw, b, news_clock=CLOCK).run(D0, D1) == []
    assert _landing_files(a) == _landing_files(b)
    # and the module-level call releases only what became public since the clock
    st = R.release_until(raw, b, cal.close_time(dt.date(2019, 2, 25)), news_clock=CLOCK)
    assert st.since == _ts(cb["now"]) and st.prices == 4 and st.total == len(_log(b)) - len(_log(a))


def test_resume_refuses_another_source(raw, tmp_path):
    R.release_until(raw, tmp_path / "l", "2019-01-02T00:00:00Z", news_clock=CLOCK)
    other = tmp_path / "copy"
    import shutil

    shutil.copytree(raw, other)
    with pytest.raises(R.ReplayError, match="filled from"):
        R.release_until(other, tmp_path / "l", "2019-01-03T00:00:00Z", news_clock=CLOCK)
    with pytest.raises(R.ReplayError, match="naive"):
        R.release_until(raw, tmp_path / "l", dt.datetime(2019, 1, 4), news_clock=CLOCK)


def test_speed_waits_in_proportion(raw, index, tmp_path):
    waits: list[float] = []
    R.Replayer(raw, tmp_path, index=index, news_clock=CLOCK).run(
        "2019-02-01", "2019-02-04", speed=3600.0, sleep=waits.append, max_wait=10.0, intraday_every=None
    )
    # start (no wait); Fri 00:00 -> 09:00 pre-open; -> 16:05 post-close; weekend; Mon 09:00 -> 16:05
    assert waits == pytest.approx([9.0, 7 + 5 / 60, 10.0, 7 + 5 / 60])  # the weekend capped by max_wait
    with pytest.raises(R.ReplayError):
        next(R.Replayer(raw, tmp_path / "x", index=index, news_clock=CLOCK).step_through("2019-02-01", "2019-02-04", speed=-1))
    with pytest.raises(R.ReplayError, match="no trading session"):
        R.session_steps("2019-02-02", "2019-02-03")


@pytest.mark.parametrize("config", sorted((ROOT / "configs").glob("*.toml")), ids=lambda p: p.name)
def test_settings_snippet_keeps_the_config(config, tmp_path):
    """The snippet = the config's own sections, with sources, calendar window and lake replaced."""
    base = load_settings(config)
    p = R.write_settings_snippet(tmp_path / "landing", tmp_path / "lake", base, first_day="2019-03-01", last_day="2019-06-28")
    s = load_settings(p)
    assert s.lake_dir == (tmp_path / "lake").resolve()
    assert s.sources.kind == "files" and s.sources.news == [str((tmp_path / "landing").resolve() / "news" / "*.csv")]
    assert (s.calendar.decision_start, s.calendar.end) == (dt.date(2019, 3, 1), dt.date(2019, 6, 28))
    assert s.calendar.start == min(base.calendar.start, dt.date(2019, 3, 1))
    keep = ("lake_dir", "world", "sources", "calendar")
    assert {k: v for k, v in s.model_dump().items() if k not in keep} == {k: v for k, v in base.model_dump().items() if k not in keep}


WIRING = {  # the two ways cli.py can register the command
    "add_typer": "app.add_typer(replay_app, name='replay')",
    "command": "app.command('replay')(replay)",
}


def _cli(args: list[str], timeout: float = 90, wiring: str = "add_typer") -> subprocess.CompletedProcess:
    """`finrag replay ...` as cli.py registers it."""
    code = (
        "import typer; from finrag_dagster.cli.replay import replay_app, replay; "
        f"app = typer.Typer(); app.command('world')(lambda: None); {WIRING[wiring]}; app()"
    )
    env = {**os.environ, "COLUMNS": "120", "FINRAG_CONFIG": "", "FINRAG_LAKE": ""}
    return subprocess.run([sys.executable, "-c", code, "replay", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def test_cli_ends_and_writes_usable_settings(raw, tmp_path):
    """(5) `finrag replay --speed 0` ends with exit 0, one line per session; the settings snippet works."""
    landing, lake = tmp_path / "landing", tmp_path / "lake"
    res = _cli(
        ["--landing", str(landing), "--from", "2019-02-04", "--to", "2019-02-09", "--speed", "0", "--source-raw", str(raw), "--lake", str(lake)]
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()
    days = [ln.split()[0] for ln in out if ln.strip()[:4] == "2019"]
    assert days == [d.isoformat() for d in cal.sessions_in_range("2019-02-04", "2019-02-08")]
    assert any(ln.strip().startswith("before 2019-02-04") for ln in out) and out[-1].startswith("done")
    assert R.read_clock(landing)["last_closed_session"] == "2019-02-08"
    # the settings snippet points finrag (files mode) at the landing folder
    s = load_settings(landing / "_replay" / "settings.toml")
    assert s.sources.kind == "files" and s.lake_dir == lake.resolve() and s.calendar.end == dt.date(2019, 2, 9)
    assert source_paths(s).universe == str(landing.resolve() / "universe" / "tickers.csv")
    uni = load_universe_frame(s)
    bars = load_table(s, "prices", uni).accepted
    assert bars["date"].max() == dt.date(2019, 2, 8)
    assert R.replay_now(s) == cal.close_time("2019-02-08") + pd.Timedelta(minutes=5)
    # the standalone module runs too and resumes (nothing new to release up to the same day)
    res2 = subprocess.run(
        [
            sys.executable,
            "-m",
            "finrag_dagster.cli.replay",
            "--landing",
            str(landing),
            "--from",
            "2019-02-04",
            "--to",
            "2019-02-11",
            "--source-raw",
            str(raw),
        ],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=ROOT,
    )
    assert res2.returncode == 0, res2.stderr
    assert "resuming" in res2.stdout and [ln.split()[0] for ln in res2.stdout.splitlines() if ln.strip()[:4] == "2019"] == ["2019-02-11"]


@pytest.mark.parametrize("wiring", sorted(WIRING))
def test_cli_bad_dates_fail_short(tmp_path, wiring):
    for args, what in ((["--from", "2019-13-45", "--to", "2019-02-01"], "--from"), (["--from", "2019-02-04", "--to", "2019-02-01"], "--to")):
        res = _cli(["--landing", str(tmp_path / "l"), *args, "--source-raw", str(tmp_path)], timeout=60, wiring=wiring)
        assert res.returncode != 0
        assert what in res.stderr and "Traceback" not in res.stderr + res.stdout
        assert len(res.stderr.splitlines()) < 10
    assert not (tmp_path / "l").exists()
    res = _cli(["--help"], timeout=60, wiring=wiring)
    assert res.returncode == 0 and "--landing" in res.stdout and "landing folder" in res.stdout
