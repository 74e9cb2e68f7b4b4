"""Retry timing shared by finrag's HTTP clients (the ``openai`` reader backend, the EDGAR downloader).

* :func:`parse_retry_after` reads a ``Retry-After`` header: delay-seconds (a decimal fraction is
  accepted) or an HTTP date, never below 0; anything else (a negative or exponent number, ``inf``,
  junk) is ignored, so the caller falls back to its own backoff.
* :func:`backoff_delay` is the exponential backoff ``min(cap, base * 2**attempt)``, with full jitter
  (uniform below that ceiling) when given a ``random.Random``; seed it for a reproducible sequence.

What to do with the numbers (cap a server's wait, or give up when it asks too much) stays with each
caller: those are its own rules.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import random
import re
import time

_DELAY_SECONDS = re.compile(r"\d+(\.\d+)?")


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (``now``: epoch seconds for an HTTP date); None if absent/unreadable."""
    if not value:
        return None
    value = value.strip()
    if _DELAY_SECONDS.fullmatch(value):
        return float(value)
    return _seconds_until_http_date(value, time.time() if now is None else now)


def _seconds_until_http_date(value: str, now: float) -> float | None:
    """Seconds from ``now`` (epoch) to the HTTP date ``value`` (0 if past, UTC if no zone); None if not a date."""
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return max(0.0, when.timestamp() - now)


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Wait before retry ``attempt + 1`` (0-based): ``min(cap, base * 2**attempt)``, or uniform below it with ``rng``."""
    ceiling = min(cap, base * (2.0**attempt))
    return rng.uniform(0.0, ceiling) if rng is not None else ceiling
