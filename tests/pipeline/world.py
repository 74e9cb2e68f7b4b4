"""A small embedded world and a files-mode settings object over it, shared by pipeline tests."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from finrag_dagster.core.settings import Settings, WorldSettings
from finrag_dagster.pipeline import run_range
from finrag_dagster.sources.synthetic import generate_world
from tests.instance import pooled_instance

WORLD = WorldSettings(
    seed=11,
    n_tickers=6,
    n_sectors=3,
    start=dt.date(2017, 11, 1),
    end=dt.date(2019, 6, 28),
    news_start=dt.date(2018, 11, 1),
)
HISTORY_START = dt.date(2017, 11, 1)
DECISION_START = dt.date(2019, 2, 1)
END = dt.date(2019, 3, 6)  # pipeline tests materialise decisions DECISION_START .. END


def build_world(root: Path) -> Path:
    """Generate the world once; returns its raw/ folder."""
    m = generate_world(WORLD, root / "world")
    return m.raw_dir


def files_settings(raw: Path, lake: Path, **sections) -> Settings:
    """Settings that read a world's raw files in files mode (so a copy can be mutated)."""
    s = Settings(
        lake_dir=lake,
        world=WORLD,
        sources={
            "kind": "files",
            "universe": str(raw / "universe" / "tickers.csv"),
            "news": [str(raw / "news" / "*.csv")],
            "prices": [str(raw / "prices" / "*.csv")],
            "filings_index": [str(raw / "sec" / "submissions" / "*.json"), str(raw / "sec" / "sec-edgar-filings")],
            "filings_text": [str(raw / "sec" / "sec-edgar-filings")],
            "market_ticker": "QQQ",
            "news_dates_only": False,  # the world's stamps are generated true: trust their time of day
        },
        calendar={"start": HISTORY_START, "end": WORLD.end, "decision_start": DECISION_START},
        splits={
            "train": (dt.date(2019, 1, 1), dt.date(2019, 1, 31)),
            "validation": (dt.date(2019, 2, 1), dt.date(2019, 2, 28)),
            "test": (dt.date(2019, 3, 1), dt.date(2019, 6, 28)),
        },
    )
    return s.with_overrides(**sections) if sections else s


# A shorter look-back for tests that compare two runs of the same settings (engines, processes,
# object storage, the UI's and the daily loop's runs against in-process ones): 147 sessions before
# DECISION_START instead of 314, still enough for the labels' market model (min_obs 120 after the
# 20-session gap), so memories learn and every stage writes what it writes in the longer world.
SHORT_HISTORY_START = dt.date(2018, 7, 2)


def short_settings(raw: Path, lake: Path, **sections) -> Settings:
    """:func:`files_settings` with the history from :data:`SHORT_HISTORY_START`."""
    cal = {"start": SHORT_HISTORY_START, "end": WORLD.end, "decision_start": DECISION_START, **sections.pop("calendar", {})}
    return files_settings(raw, lake, calendar=cal, **sections)


def copy_raw(raw: Path, dest: Path) -> Path:
    shutil.copytree(raw, dest)
    return dest


def materialize(settings: Settings, end: dt.date, decision_start: dt.date = DECISION_START, only=None):
    with pooled_instance() as inst:
        return run_range(settings, end=end, decision_start=decision_start, instance=inst, only=only)
