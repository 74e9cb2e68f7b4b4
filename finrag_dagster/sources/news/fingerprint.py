"""What decides whether a staged news file is read again: byte fingerprints of the file's head and
tail, and the settings its staged rows depend on (:func:`settings_key`); docs/ingest.md."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import polars as pl

from ..base import SourceError
from .clock import NewsClock

STAGE_VERSION = 4  # bump when what a staged segment holds changes (3: title_from_url flags; 4: minute_only)
HEAD_BYTES = 1 << 20
TAIL_BYTES = 1 << 16


def _sha(path: Path, start: int, stop: int) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as fh:
        fh.seek(max(start, 0))
        left = stop - max(start, 0)
        while left > 0:
            b = fh.read(min(left, 1 << 20))
            if not b:
                break
            h.update(b)
            left -= len(b)
    return h.hexdigest()


def _byte_at(path: Path, pos: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(pos)
        return fh.read(1)


def _header_len(path: Path) -> int:
    """Bytes of the CSV's header line, its newline included."""
    with open(path, "rb") as fh:
        line = fh.readline(1 << 20)
    if not line.endswith(b"\n"):
        raise SourceError(f"{path.name}: no header line within the first MiB")
    return len(line)


def settings_key(universe: list[str], clock: NewsClock, calendar_end: dt.date | None, calendar_start: dt.date | None = None) -> str:
    """What the staged rows depend on besides the file's bytes."""
    blob = json.dumps(
        {
            "v": STAGE_VERSION,
            "universe": universe,
            "clock": clock.describe(),
            "calendar_start": str(calendar_start),
            "calendar_end": str(calendar_end),
            "polars": pl.__version__,
        },
        sort_keys=True,
    )
    return hashlib.sha1(blob.encode()).hexdigest()
