"""The experience task's inputs are point in time (docs/method.md §1, §9; seed 002 §5).

The score of task day T is decided at decision_time(T) = close(T). It may read the news and
anchors of decision days T−4 … T: a partition of decision day d holds exactly the items public
before close(d), so the partitions up to T are known at close(T) and the partition of T+1 (items
public after close(T)) is not. A tiny lake holds one news row and one anchor per sector and
session, each naming its own day; the inputs of each task day must name exactly the five sessions
T−4 … T, with the anchor's age T − d, even though the lake holds the next sessions too.
"""

import datetime as dt

import numpy as np
import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.evaluation import experience as task_io
from finrag_dagster.core.settings import Settings
from finrag_dagster.core.tables import Lake

cal = nyse()
SESSIONS = cal.sessions_in_range(dt.date(2021, 3, 1), dt.date(2021, 3, 12))  # ten sessions, Mon 1 .. Fri 12 March
SECTOR = {"AAA": "Tech", "BBB": "Energy"}


def _universe() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "ticker": ["AAA", "BBB", "QQQ"],
            "company": ["Acme Corp", "Bolt Inc", "Invesco QQQ"],
            "sector": ["Tech", "Energy", "ETF"],
            "sub_industry": [None, None, None],
            "cik": [1, 2, None],
            "aliases": ["", "", ""],
            "is_benchmark": [False, False, True],
        },
        schema_overrides={"sub_industry": pl.Utf8, "cik": pl.Int64},
    )


def _at(day: dt.date, hour: int) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, hour, tzinfo=dt.timezone.utc)


def _news(day: dt.date) -> pl.DataFrame:
    t = _at(day, 15)  # 10:00 New York: public before close(day)
    return pl.DataFrame(
        {
            "news_id": [f"N{day:%m%d}{tk}" for tk in SECTOR],
            "ticker": list(SECTOR),
            "public_time": [t, t],
            "source_time": [t, t],
            "time_precision": ["second", "second"],
            "title": [f"{tk} news of {day}" for tk in SECTOR],
            "summary": ["", ""],
            "article": ["", ""],
            "url": [f"https://x/n/{day}/{tk}" for tk in SECTOR],
            "publisher": ["p", "p"],
            "source_file": ["f", "f"],
            "source_row": [0, 1],
        }
    )


def _anchors(day: dt.date) -> pl.DataFrame:
    t, close = _at(day, 15), cal.close_time(day).to_pydatetime()
    return pl.DataFrame(
        {
            "anchor_id": [f"A{day:%m%d}{tk}" for tk in SECTOR],
            "passage_id": [f"A{day:%m%d}{tk}" for tk in SECTOR],
            "ticker": list(SECTOR),
            "sector": list(SECTOR.values()),
            "public_time": [t, t],
            "time_precision": ["second", "second"],
            "decision_time": [close, close],
            "session": ["regular", "regular"],
            "headline": [f"{tk} anchor of {day}" for tk in SECTOR],
            "summary": ["", ""],
            "url": [f"https://x/a/{day}/{tk}" for tk in SECTOR],
            "event_type": ["Other/Mixed", "Other/Mixed"],
            "cue_counts": ["{}", "{}"],
            "dup_cluster": [f"A{day:%m%d}{tk}" for tk in SECTOR],
        }
    )


@pytest.fixture
def lake(tmp_path, monkeypatch):
    # the digests' MiniLM vectors do not decide which days are read: a constant vector, no model load
    monkeypatch.setattr(task_io, "embed", lambda texts, *a, **k: [np.ones(4, dtype=np.float32) for _ in texts])
    lake = Lake(tmp_path)
    lake.write("universe", _universe())
    for d in SESSIONS:
        lake.write("news_raw", _news(d), date=d)
        lake.write("anchors", _anchors(d), date=d)
    return lake


def test_a_task_day_reads_the_news_and_anchors_of_t_minus_4_through_t_only(lake):
    days = [d.isoformat() for d in SESSIONS[5:8]]  # task days 8, 9, 10 March; the lake also holds 11 and 12 March
    inputs = task_io.task_inputs(Settings(), lake, cal, days)
    for t in SESSIONS[5:8]:
        i = SESSIONS.index(t)
        seen = SESSIONS[i - 4 : i + 1]  # T-4 .. T
        by = {x.target: x for x in inputs(t)}
        assert sorted(by) == ["Energy", "Tech"]
        for tk, sector in SECTOR.items():
            x = by[sector]
            assert x.raw_texts == [f"{tk} news of {d}. " for d in seen], (t, sector)
            events = sorted((e[2], e[4]) for e in x.events)
            assert events == sorted((f"{tk} anchor of {d}", i - SESSIONS.index(d)) for d in seen), (t, sector)
            assert min(e[4] for e in x.events) == 0  # the newest item read is of T itself, never after it


def test_a_window_reaching_before_the_lake_reads_what_is_there_and_nothing_after_t(lake):
    days = [SESSIONS[0].isoformat(), SESSIONS[1].isoformat()]
    inputs = task_io.task_inputs(Settings(), lake, cal, days)
    # the window starts at the first loaded day; the next session's news (public after close(T)) is not read
    for t, seen in ((SESSIONS[0], SESSIONS[:1]), (SESSIONS[1], SESSIONS[:2])):
        x = {x.target: x for x in inputs(t)}["Tech"]
        assert x.raw_texts == [f"AAA news of {d}. " for d in seen], t


# ---------------------------------------------------------------- what a window holds, by hand
START = cal.sessions_in_range(dt.date(2000, 1, 3), dt.date(2000, 1, 12))  # the calendar's first sessions
WIDE = {"AAA": "Tech", "AAB": "Tech", "BBB": "Energy", "CCC": "", "DDD": "Unknown", "EEE": "ETF", "QQQ": "ETF"}  # sector is never null (schema)


def _wide_universe() -> pl.DataFrame:
    n = len(WIDE)
    return pl.DataFrame(
        {
            "ticker": list(WIDE),
            "company": [f"{t} Corp" for t in WIDE],
            "sector": list(WIDE.values()),
            "sub_industry": [None] * n,
            "cik": list(range(1, n + 1)),
            "aliases": [""] * n,
            "is_benchmark": [t == "QQQ" for t in WIDE],
        },
        schema_overrides={"sub_industry": pl.Utf8, "cik": pl.Int64, "sector": pl.Utf8},
    )


def _wide_news(day: dt.date) -> pl.DataFrame:
    tks = ["AAA", "BBB", "CCC"]
    f = _news(day).head(1)
    return pl.concat([f.with_columns(pl.lit(t).alias("ticker"), pl.lit(f"N{day:%m%d}{t}").alias("news_id")) for t in tks]).with_columns(
        pl.Series("title", ["", f"BBB title {day}", f"CCC title {day}"], dtype=pl.Utf8),
        pl.Series("summary", [f"AAA summary {day}", "", "x"], dtype=pl.Utf8),
    )


def _wide_anchors(day: dt.date) -> pl.DataFrame:
    a = _anchors(day).head(1)
    rows = [  # ticker, event type, headline, summary: AAB's type sorts first, AAA's headlines against their summaries
        ("AAA", "Other/Mixed", f"a1 record profit {day}", f"z {day}"),
        ("AAA", "Other/Mixed", f"a2 record profit {day}", f"y {day}"),
        ("AAB", "Earnings & Guidance", "", ""),
    ]
    return pl.concat(
        [
            a.with_columns(
                pl.lit(f"A{day:%m%d}{i}").alias("anchor_id"),
                pl.lit(f"A{day:%m%d}{i}").alias("passage_id"),
                pl.lit(tk).alias("ticker"),
                pl.lit(et).alias("event_type"),
                pl.lit(h, dtype=pl.Utf8).alias("headline"),
                pl.lit(sm, dtype=pl.Utf8).alias("summary"),
            )
            for i, (tk, et, h, sm) in enumerate(rows)
        ]
    )


@pytest.fixture
def wide(tmp_path, monkeypatch):
    calls = []

    def fake_embed(texts, batch, max_len):
        calls.append((list(texts), batch, max_len))
        return [np.array([len(t), i], dtype=np.float64) for i, t in enumerate(texts)]

    monkeypatch.setattr(task_io, "embed", fake_embed)
    lake = Lake(tmp_path)
    lake.write("universe", _wide_universe())
    return lake, calls


def test_a_window_holds_every_members_text_and_events_in_order_and_embeds_the_digests(wide):
    lake, calls = wide
    for d in START:
        lake.write("news_raw", _wide_news(d), date=d)
        lake.write("anchors", _wide_anchors(d), date=d)
    s = Settings()
    t = START[4]  # the window T-4 .. T starts at the calendar's first session
    inputs = task_io.task_inputs(s, lake, cal, [t.isoformat()])
    out = {x.target: x for x in inputs(t)}
    assert sorted(out) == ["Energy", "Tech"]  # no benchmark, no "", "Unknown" or "ETF" sector
    tech, energy = out["Tech"], out["Energy"]
    window = START[:5]
    assert sorted(tech.raw_texts) == sorted(f". AAA summary {d}" for d in window)
    assert sorted(energy.raw_texts) == sorted(f"BBB title {d}. " for d in window)
    want = []
    for age in range(5):
        d = window[4 - age]
        want += [("AAA", "Other/Mixed", f"a1 record profit {d}", f"z {d}", age), ("AAA", "Other/Mixed", f"a2 record profit {d}", f"y {d}", age)]
        want += [("AAB", "Earnings & Guidance", "", "", age)]
    assert tech.events == want  # by age, then ticker, then headline
    assert energy.events == [] and (energy.f_text, energy.state, energy.vec) == ("", "", None)
    assert tech.f_text and tech.state
    assert calls == [([tech.state], s.evidence.embed_batch_size, s.evidence.embed_max_seq_length)]
    assert tech.vec.dtype == np.float32 and tech.vec.tolist() == [len(tech.state), 0.0]
    priced = task_io.task_inputs(s, lake, cal, [t.isoformat()], priced={"BBB"})
    assert [x.target for x in priced(t)] == ["Energy"]  # a sector is a target only with a priced member


def test_task_days_near_the_calendars_start_read_their_own_day_and_nothing_after(wide):
    lake, _ = wide
    for d in START:
        lake.write("news_raw", _wide_news(d), date=d)
    inputs = task_io.task_inputs(Settings(), lake, cal, [START[3].isoformat(), START[4].isoformat()])
    texts = {x.target: x.raw_texts for x in inputs(START[3])}["Energy"]
    assert f"BBB title {START[3]}. " in texts and all(f"{d}" not in " ".join(texts) for d in START[4:])


def test_a_lake_without_news_or_anchors_gives_empty_windows(wide):
    lake, calls = wide
    t = START[6]
    out = task_io.task_inputs(Settings(), lake, cal, [t.isoformat()])(t)
    assert [(x.target, x.raw_texts, x.events, x.state, x.vec) for x in out] == [("Energy", [], [], "", None), ("Tech", [], [], "", None)]
    assert calls == []
