"""Replay a files-mode raw folder day by day into a *landing folder*, in the same real formats.

A replay clock moves forward in steps; each step releases into the landing folder every news row,
price bar and filing whose public time is at or before the clock (``public_time <= now``) and was
not released yet, with public times derived as the FNSPID, price and EDGAR loaders derive them.
Items without a readable time are never released. Every file is written atomically, and the landing
content is a function of the clock alone, so a replay interrupted and resumed writes the same bytes;
a new :class:`Replayer` resumes from ``<landing>/_replay/clock.json``. Layout, release rules and the
bookkeeping files: docs/replay.md. One module per step: layout, index, clock, replayer, snippet;
every name is importable from here.
"""

from ..news import news_public_ns
from .clock import ReleaseStats, atomic_copy, atomic_write, last_closed_session, read_clock, replay_now
from .index import SourceIndex, cached_index, index_source, split_csv_records
from .layout import NEVER, ReplayError, price_public_ns
from .replayer import Replayer, SessionReport, Step, release_until, session_steps, start_of
from .snippet import files_settings_toml, write_settings_snippet

__all__ = [
    "Replayer",
    "ReplayError",
    "ReleaseStats",
    "SessionReport",
    "Step",
    "SourceIndex",
    "index_source",
    "cached_index",
    "release_until",
    "session_steps",
    "start_of",
    "read_clock",
    "replay_now",
    "last_closed_session",
    "news_public_ns",
    "price_public_ns",
    "split_csv_records",
    "files_settings_toml",
    "write_settings_snippet",
    "atomic_write",
    "atomic_copy",
    "NEVER",
]
