"""The EDGAR downloader's HTTP rules: the declared User-Agent the SEC requires, the errors that stop a
download, the request-rate limiter shared by every request of a run, and the httpx client
(docs/edgar_fetch.md).
"""

from __future__ import annotations

import os
import re
import threading
import time
from typing import Callable

import httpx

DEFAULT_BASE_URL = "https://www.sec.gov"
DEFAULT_DATA_BASE_URL = "https://data.sec.gov"
DEFAULT_MAX_RPS = 10.0
USER_AGENT_ENV = "FINRAG_SEC_USER_AGENT"
BASE_URL_ENV = "FINRAG_SEC_BASE_URL"
DATA_BASE_URL_ENV = "FINRAG_SEC_DATA_BASE_URL"
USER_AGENT_EXAMPLE = "Jane Doe jane@example.com"

_EMAIL = re.compile(r"[^\s@]+@[^\s@]+\.[^\s@]+")


class EdgarFetchError(RuntimeError):
    """The download cannot go on as asked (clear message for the user)."""


class MissingUserAgentError(EdgarFetchError):
    """No usable User-Agent: the SEC blocks anonymous automated requests."""


class EdgarHTTPError(EdgarFetchError):
    """A URL could not be fetched (after the retries, when the failure was retryable)."""

    def __init__(self, url: str, message: str, status: int | None = None):
        super().__init__(f"{url}: {message}")
        self.url = url
        self.status = status


class EdgarBlockedError(EdgarHTTPError):
    """403, or 429 that would not stop: the SEC wants us to stop, so the whole run stops."""


def resolve_user_agent(option: str | None = None, environ: dict | None = None) -> str:
    """The User-Agent to send: ``option``, else ``$FINRAG_SEC_USER_AGENT``.

    Raises
    ------
    MissingUserAgentError
        Neither is set, or the value has no contact email.
    """
    env = os.environ if environ is None else environ
    ua = (option or env.get(USER_AGENT_ENV) or "").strip()
    if not ua:
        raise MissingUserAgentError(
            f"the SEC requires a User-Agent naming you and a contact email; pass --user-agent "
            f'"{USER_AGENT_EXAMPLE}" or set {USER_AGENT_ENV}="{USER_AGENT_EXAMPLE}"'
        )
    if not _EMAIL.search(ua):
        raise MissingUserAgentError(f'User-Agent {ua!r} has no contact email; the SEC asks for a name and an email, e.g. "{USER_AGENT_EXAMPLE}"')
    return ua


class RateLimiter:
    """At most ``max_rps`` request starts per second, shared by every caller (thread-safe).

    Starts are spaced ``(1 + headroom) / max_rps`` seconds apart (a token bucket of capacity one),
    so no one-second window ever holds more than ``max_rps`` starts; the headroom absorbs network
    jitter between our clock and the server's.
    """

    def __init__(
        self,
        max_rps: float = DEFAULT_MAX_RPS,
        headroom: float = 0.05,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not max_rps or max_rps <= 0:
            raise ValueError(f"max_rps must be positive, got {max_rps!r}")
        self.interval = (1.0 + headroom) / float(max_rps)
        self._clock, self._sleep = clock, sleep
        self._next = float("-inf")
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Block until this caller may start a request; returns the granted start time."""
        with self._lock:
            now = self._clock()
            slot = max(now, self._next)
            self._next = slot + self.interval
        if slot > now:
            self._sleep(slot - now)
        return slot


def make_client(timeout: float = 60.0) -> httpx.Client:
    """An httpx client fit for EDGAR (compressed transfers, redirects followed)."""
    return httpx.Client(timeout=httpx.Timeout(timeout, connect=15.0), follow_redirects=True, headers={"Accept-Encoding": "gzip, deflate"})
