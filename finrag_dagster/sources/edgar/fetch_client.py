"""The EDGAR downloader's HTTP half (:class:`EdgarHTTP`): requests paced by a :class:`RateLimiter`,
retried as :class:`FetchPolicy` says (honouring ``Retry-After``), bodies written through atomic
renames, JSON cached on disk; and the counts of a run (:class:`FetchSummary`).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import httpx

from ...core.http_retry import backoff_delay, parse_retry_after
from ...core.storage.atomic import atomic_file
from .fetch_http import (
    DEFAULT_BASE_URL,
    DEFAULT_DATA_BASE_URL,
    DEFAULT_MAX_RPS,
    USER_AGENT_EXAMPLE,
    EdgarBlockedError,
    EdgarHTTPError,
    RateLimiter,
    resolve_user_agent,
)
from .fetch_layout import PART_PREFIX, PART_SUFFIX


@dataclass
class FetchSummary:
    """Counts of one run.

    ``fetched`` and ``skipped`` count documents; ``failed`` counts documents that could not be
    fetched plus tickers whose CIK or submissions JSON could not be had (details in ``errors``).
    """

    fetched: int = 0
    skipped: int = 0
    failed: int = 0
    submissions_fetched: int = 0
    submissions_reused: int = 0
    requests: int = 0
    errors: list[str] = field(default_factory=list)
    aborted: str | None = None

    @property
    def ok(self) -> bool:
        return not self.errors and self.aborted is None

    def line(self) -> str:
        s = (
            f"EDGAR: {self.fetched} fetched, {self.skipped} skipped (already present), {self.failed} failed; "
            f"submissions JSON {self.submissions_fetched} fetched, {self.submissions_reused} reused; "
            f"{self.requests} requests"
        )
        if self.aborted:
            s += f"; stopped early: {self.aborted}"
        return s


@dataclass(frozen=True)
class FetchPolicy:
    """Where :class:`EdgarFetcher` fetches from and how it paces and retries.

    ``base_url``, ``data_base_url``: www.sec.gov and data.sec.gov, overridable for mirrors and tests.
    ``max_rps``: request starts per second, all requests together (retries included).
    ``max_retries``: retries after the first attempt for 429, 5xx and transport errors.
    ``backoff_base``, ``backoff_cap``: the wait before retry ``k`` (0-based) without a Retry-After,
    ``min(cap, base * 2**k)`` seconds. ``max_retry_after``: a longer Retry-After ends the run (we
    neither wait hours nor ignore it). ``submissions_max_age_s``: a submissions JSON on disk younger
    than this is reused (0: always refetch). ``max_consecutive_failures``: the run stops after this
    many documents in a row failed (the server is likely down).
    """

    base_url: str = DEFAULT_BASE_URL
    data_base_url: str = DEFAULT_DATA_BASE_URL
    max_rps: float = DEFAULT_MAX_RPS
    max_retries: int = 5
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    max_retry_after: float = 600.0
    submissions_max_age_s: float = 86400.0
    max_consecutive_failures: int = 5


class EdgarHTTP:
    """The HTTP half of :class:`EdgarFetcher` (its arguments are documented there): GET with the rate
    limit and retries, a body streamed to disk through an atomic rename, and JSON cached on disk."""

    def __init__(
        self,
        client: httpx.Client,
        user_agent: str,
        out: str | Path,
        policy: FetchPolicy = FetchPolicy(),
        *,
        limiter: RateLimiter | None = None,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], float] = time.time,
        progress: bool = False,
    ):
        p = policy
        self.client = client
        self.user_agent = resolve_user_agent(user_agent, environ={})
        self.out = Path(out)
        self.base_url = p.base_url.rstrip("/")
        self.data_base_url = p.data_base_url.rstrip("/")
        self.limiter = limiter or RateLimiter(p.max_rps)
        self.max_retries = int(p.max_retries)
        self.backoff_base, self.backoff_cap = float(p.backoff_base), float(p.backoff_cap)
        self.max_retry_after = float(p.max_retry_after)
        self.submissions_max_age_s = float(p.submissions_max_age_s)
        self.max_consecutive_failures = int(p.max_consecutive_failures)
        self.sleep, self.now = sleep, now
        self.progress = progress
        self.requests = 0

    # ------------------------------------------------------------------ HTTP
    def _request(self, url: str, consume: Callable[[httpx.Response], object]):
        """GET ``url`` with rate limit and retries; ``consume`` reads a 200 response."""
        attempt = 0
        while True:
            self.limiter.acquire()
            self.requests += 1
            retry_after: float | None = None
            try:
                with self.client.stream("GET", url, headers={"User-Agent": self.user_agent}) as resp:
                    status = resp.status_code
                    if status == 200:
                        return consume(resp)
                    retry_after = parse_retry_after(resp.headers.get("Retry-After"), self.now())
                    reason = f"HTTP {status} {resp.reason_phrase}".strip()
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                raise EdgarHTTPError(url, f"bad URL ({exc})") from exc
            except httpx.RequestError as exc:  # connection, timeout, truncated or undecodable body
                status, reason = None, f"{type(exc).__name__}: {exc}"
            if status == 403:
                raise EdgarBlockedError(
                    url,
                    f"{reason}: the SEC refused the request (it blocks tools without a declared "
                    f'User-Agent, e.g. "{USER_AGENT_EXAMPLE}", and clients above 10 requests/second)',
                    status,
                )
            retryable = status is None or status == 429 or 500 <= status <= 599
            if not retryable:
                raise EdgarHTTPError(url, reason, status)
            if attempt >= self.max_retries:
                msg = f"{reason} after {attempt + 1} attempts"
                if status == 429:
                    raise EdgarBlockedError(url, msg + " (still rate-limited; try again later)", status)
                raise EdgarHTTPError(url, msg, status)
            wait = retry_after if retry_after is not None else backoff_delay(attempt, self.backoff_base, self.backoff_cap)
            if wait > self.max_retry_after:
                raise EdgarBlockedError(
                    url, f"{reason}: server asks to retry after {wait:.0f}s (more than {self.max_retry_after:.0f}s); try again later", status
                )
            self.sleep(wait)
            attempt += 1

    def get_bytes(self, url: str) -> bytes:
        """Body of a 200 response (rate-limited, retried)."""
        return self._request(url, lambda r: r.read())

    def download(self, url: str, dest: Path, check: Callable[[bytes], str | None] | None = None) -> int:
        """Stream ``url`` into ``dest`` through a temp file and an atomic rename; returns bytes written.

        ``check(first_bytes)`` returns an error message to refuse a body (nothing is written).
        """

        def consume(resp: httpx.Response) -> int:
            new_dir = not dest.parent.exists()
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f"{PART_PREFIX}{dest.name}.", suffix=PART_SUFFIX)
            try:
                n, head = 0, b""
                with os.fdopen(fd, "wb") as fh:
                    for chunk in resp.iter_bytes():
                        if len(head) < 8192:
                            head += chunk[: 8192 - len(head)]
                        fh.write(chunk)
                        n += len(chunk)
                    fh.flush()
                    os.fsync(fh.fileno())
                problem = check(head) if check else None
                if problem is None and n == 0:
                    problem = "empty body"
                if problem:
                    raise EdgarHTTPError(url, problem, resp.status_code)
                os.replace(tmp, dest)
                return n
            except BaseException:
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
                if new_dir:
                    try:
                        dest.parent.rmdir()  # no empty accession folder for a filing we do not have
                    except OSError:
                        pass
                raise

        return self._request(url, consume)

    def _write_atomic(self, dest: Path, data: bytes) -> None:
        with atomic_file(dest, prefix=f"{PART_PREFIX}{dest.name}.", suffix=PART_SUFFIX) as fh:
            fh.write(data)

    def _fresh(self, path: Path) -> bool:
        try:
            st = path.stat()
        except FileNotFoundError:
            return False
        return st.st_size > 0 and (self.now() - st.st_mtime) < self.submissions_max_age_s

    def _json(self, url: str, dest: Path, summary: FetchSummary | None, max_age: bool = True) -> object:
        """JSON at ``url``, cached at ``dest`` (reused when fresh, or always when ``max_age`` is False)."""
        if dest.is_file() and dest.stat().st_size > 0 and (not max_age or self._fresh(dest)):
            try:
                doc = json.loads(dest.read_bytes())
                if summary is not None and max_age:
                    summary.submissions_reused += 1
                return doc
            except ValueError:
                pass  # a bad cached file is fetched again
        data = self.get_bytes(url)
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise EdgarHTTPError(url, f"response is not JSON ({exc})") from exc
        self._write_atomic(dest, data)
        if summary is not None and max_age:
            summary.submissions_fetched += 1
        return doc
