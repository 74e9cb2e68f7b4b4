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
