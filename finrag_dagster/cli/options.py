"""Option values the commands share."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Optional

import typer


def day(value: str, name: str) -> dt.date:
    """A YYYY-MM-DD option value, or an error naming the option."""
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)", param_hint=name) from None


class LakeMissing(ValueError):
    """The lake a command should read (or write into) is not there, or is a file."""


def settings_for(config: Optional[Path], lake: Optional[str]):
    """The settings of ``--config`` (or $FINRAG_CONFIG), with ``--lake`` in place of their lake when given."""
    from ..core.settings import load_settings, with_lake

    s = load_settings(config)
    if lake:
        s = with_lake(s, lake)
    if not s.lake_uri and Path(s.lake_dir).exists() and not Path(s.lake_dir).is_dir():
        raise LakeMissing(f"the lake {s.lake_dir} is a file, not a folder")
    return s


def lake_to_read(s) -> None:
    """A command that reads a lake (status, summary, search, report) stops on a lake that is not
    there, instead of answering from nothing (a typo in --lake printed empty tables, exit 0)."""
    if s.lake_uri:  # an object store: an empty prefix is a valid, empty lake
        return
    from ..core.tables import package_catalog

    root = Path(s.lake_dir)
    if not root.is_dir():
        raise LakeMissing(f"no lake at {root}")
    if not any((root / name).is_dir() for name in package_catalog()):
        raise LakeMissing(f"{root} holds no finrag table")
