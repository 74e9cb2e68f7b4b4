"""Option values the commands share."""

from __future__ import annotations

import datetime as dt

import typer


def day(value: str, name: str) -> dt.date:
    """A YYYY-MM-DD option value, or an error naming the option."""
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)", param_hint=name) from None
