"""A polite EDGAR downloader: submissions JSON and full submissions, in the layout ``sources/edgar/`` reads.

It writes the SEC's ticker -> CIK map, the submissions JSON (and overflow pages) and each selected
filing's ``full-submission.txt`` in sec-edgar-downloader's layout under ``out``, and follows the
SEC's fair-access rules: a declared User-Agent (no default), at most ``max_rps`` requests per
second over the whole run (:class:`RateLimiter`), bounded retries honouring ``Retry-After``, and
nothing fetched twice (atomic renames; recent submissions JSON reused). What it writes, the rules
and how to point ``filings_index`` / ``filings_text`` at the download: docs/edgar_fetch.md.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import re
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import httpx

from ..core.http_retry import backoff_delay, parse_retry_after
from ..core.storage.atomic import atomic_file

DEFAULT_BASE_URL = "https://www.sec.gov"
DEFAULT_DATA_BASE_URL = "https://data.sec.gov"
DEFAULT_FORMS = ("8-K", "10-Q", "10-K")
DEFAULT_MAX_RPS = 10.0
USER_AGENT_ENV = "FINRAG_SEC_USER_AGENT"
BASE_URL_ENV = "FINRAG_SEC_BASE_URL"
DATA_BASE_URL_ENV = "FINRAG_SEC_DATA_BASE_URL"
USER_AGENT_EXAMPLE = "Jane Doe jane@example.com"
TICKERS_FILE = "company_tickers.json"
SUBMISSIONS_DIR = "submissions"
FILINGS_DIR = "sec-edgar-filings"
DOC_NAME = "full-submission.txt"
PART_PREFIX = ".edgar-fetch-"
PART_SUFFIX = ".part"

_EMAIL = re.compile(r"[^\s@]+@[^\s@]+\.[^\s@]+")
_ACCESSION = re.compile(r"^\d{10}-\d{2}-\d{6}$")


# ============================================================================ errors
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


# ============================================================================ rate limit
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


# ============================================================================ what to fetch
@dataclass(frozen=True)
class FilingRef:
    """One filing to download."""

    ticker: str
    cik: int
    form: str
    accession: str
    accepted: str  # acceptanceDateTime as the submissions JSON gives it ("" if absent)

    @property
    def folder_form(self) -> str:
        """The form folder: amendments share their base form's (sec-edgar-downloader's convention)."""
        base = self.form[:-2] if self.form.upper().endswith("/A") else self.form
        return base.replace("/", "_").strip() or "UNKNOWN"

    def url(self, base_url: str) -> str:
        return f"{base_url.rstrip('/')}/Archives/edgar/data/{self.cik}/{self.accession.replace('-', '')}/{self.accession}.txt"

    def path(self, out: Path) -> Path:
        ticker = self.ticker.replace("/", "-").replace("\\", "-")
        return Path(out) / FILINGS_DIR / ticker / self.folder_form / self.accession / DOC_NAME


def expand_forms(forms: Iterable[str], include_amendments: bool = True) -> tuple[str, ...]:
    """Upper-case forms, each followed by its ``/A`` amendment when ``include_amendments``."""
    out: list[str] = []
    for f in forms:
        f = f.strip().upper()
        if not f:
            continue
        for g in (f, f + "/A") if include_amendments and not f.endswith("/A") else (f,):
            if g not in out:
                out.append(g)
    return tuple(out)


def _eastern_midnight_utc(day: dt.date) -> dt.datetime:
    try:
        from zoneinfo import ZoneInfo

        tz: dt.tzinfo = ZoneInfo("America/New_York")
    except Exception:  # no tz database: EST is close enough for a day boundary
        tz = dt.timezone(dt.timedelta(hours=-5))
    return dt.datetime.combine(day, dt.time(0), tzinfo=tz).astimezone(dt.timezone.utc)


def _accepted_utc(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def select_filings(block: dict, ticker: str, cik: int, forms: Sequence[str], since: dt.date) -> list[FilingRef]:
    """Filings of a submissions block (``filings.recent`` or an overflow page) to download.

    A filing is kept when its form is one of ``forms`` (exact, upper-case) and it was accepted on
    or after ``since`` 00:00 US/Eastern (``acceptanceDateTime`` is UTC); without an acceptance time
    its ``filingDate`` decides.
    """
    want = {f.upper() for f in forms}
    cutoff = _eastern_midnight_utc(since)
    accs = block.get("accessionNumber") or []
    n = len(accs)

    def arr(key: str) -> list:
        v = list(block.get(key) or [])
        return v + [None] * (n - len(v))

    out = []
    for acc, form, accepted, filed in zip(accs, arr("form"), arr("acceptanceDateTime"), arr("filingDate")):
        form = (form or "").strip().upper()
        acc = (acc or "").strip()
        if form not in want or not _ACCESSION.match(acc):
            continue
        t = _accepted_utc(accepted)
        if t is not None:
            if t < cutoff:
                continue
        elif not filed or str(filed)[:10] < since.isoformat():
            continue
        out.append(FilingRef(ticker=ticker, cik=int(cik), form=form, accession=acc, accepted=accepted or ""))
    return out


def read_universe_ciks(path: str | Path) -> dict[str, int]:
    """Ticker -> CIK from a universe CSV (columns ``ticker`` and ``cik``; ``cik_sp500`` as fallback)."""
    out: dict[str, int] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        cols = {c.strip().lower(): c for c in (reader.fieldnames or [])}
        if "ticker" not in cols or not ({"cik", "cik_sp500"} & set(cols)):
            raise EdgarFetchError(f"{path}: a universe CSV needs 'ticker' and 'cik' columns (has {reader.fieldnames})")
        for row in reader:
            t = (row.get(cols["ticker"]) or "").strip().upper()
            raw = next((row.get(cols[c]) for c in ("cik", "cik_sp500") if c in cols and (row.get(cols[c]) or "").strip()), "")
            try:
                cik = int(float(raw)) if raw else None
            except ValueError:
                cik = None
            if t and cik:
                out[t] = cik
    return out


def _norm_ticker(t: str) -> str:
    return t.strip().upper().replace(".", "-")


def _sec_ticker_map(doc: object) -> dict[str, int]:
    """Normalised ticker -> CIK from ``company_tickers.json`` ({"0": {"cik_str", "ticker", "title"}, ...})."""
    rows = doc.values() if isinstance(doc, dict) else (doc if isinstance(doc, list) else [])
    out: dict[str, int] = {}
    for r in rows:
        if isinstance(r, dict) and r.get("ticker") and r.get("cik_str") is not None:
            out.setdefault(_norm_ticker(str(r["ticker"])), int(r["cik_str"]))
    return out


# ============================================================================ summary
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


# ============================================================================ downloader
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


class EdgarFetcher:
    """Downloads submissions JSON and full submissions from EDGAR into ``out``.

    ``client``: the HTTP client (its own headers are kept; the User-Agent is set on every request).
    ``user_agent``: "Name contact@email" (see :func:`resolve_user_agent`). ``out``: the output folder
    (layout in the module docstring). ``policy``: the addresses, pace and retries (:class:`FetchPolicy`).
    ``limiter``: a shared :class:`RateLimiter` (default: one at ``policy.max_rps``). ``sleep``: used for
    retry waits (tests inject a recorder; ``limiter`` has its own clock). ``now``: the wall clock
    (seconds since the epoch) for file ages and HTTP-date Retry-After.
    """

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

    # ------------------------------------------------------------------ steps
    def ticker_ciks(self, tickers: Sequence[str], universe: str | Path | None = None) -> tuple[dict[str, int], list[str]]:
        """CIK of each ticker (universe file first, then the SEC map) and the tickers not found.

        The SEC map is cached at ``<out>/company_tickers.json``; it is fetched again only when a
        ticker is missing from a cached copy older than ``submissions_max_age_s``.
        """
        found: dict[str, int] = {}
        uni = read_universe_ciks(universe) if universe else {}
        uni = {_norm_ticker(k): v for k, v in uni.items()}
        missing = []
        for t in tickers:
            if _norm_ticker(t) in uni:
                found[t] = uni[_norm_ticker(t)]
            else:
                missing.append(t)
        if missing:
            url, path = f"{self.base_url}/files/{TICKERS_FILE}", self.out / TICKERS_FILE
            before = self.requests
            sec = _sec_ticker_map(self._json(url, path, None, max_age=False))
            if self.requests == before and not self._fresh(path) and any(_norm_ticker(t) not in sec for t in missing):
                path.unlink(missing_ok=True)  # an old cached map may predate a listing: refresh it once
                sec = _sec_ticker_map(self._json(url, path, None, max_age=False))
            still = []
            for t in missing:
                if _norm_ticker(t) in sec:
                    found[t] = sec[_norm_ticker(t)]
                else:
                    still.append(t)
            missing = still
        return found, missing

    def submissions(self, cik: int, since: dt.date, summary: FetchSummary) -> list[dict]:
        """Filing blocks of a CIK: ``filings.recent``, plus the overflow pages reaching ``since``."""
        name = f"CIK{cik:010d}.json"
        doc = self._json(f"{self.data_base_url}/submissions/{name}", self.out / SUBMISSIONS_DIR / name, summary)
        filings = doc.get("filings") if isinstance(doc, dict) else None
        if not isinstance(filings, dict) or not isinstance(filings.get("recent"), dict):
            raise EdgarFetchError(f"{self.data_base_url}/submissions/{name}: not an SEC submissions document")
        blocks = [filings["recent"]]
        for page in filings.get("files") or []:
            pname = str(page.get("name") or "")
            if not re.fullmatch(r"CIK\d{10}-submissions-\d{3}\.json", pname):
                continue
            if str(page.get("filingTo") or "9999")[:10] < since.isoformat():
                continue  # the page ends before the window
            pdoc = self._json(f"{self.data_base_url}/submissions/{pname}", self.out / SUBMISSIONS_DIR / pname, summary)
            if isinstance(pdoc, dict):
                blocks.append(pdoc)
        return blocks

    def plan(
        self,
        tickers: Sequence[str],
        since: dt.date,
        forms: Sequence[str] = DEFAULT_FORMS,
        include_amendments: bool = True,
        universe: str | Path | None = None,
        summary: FetchSummary | None = None,
    ) -> list[FilingRef]:
        """The filings to have on disk (present or not), one per accession."""
        summary = summary if summary is not None else FetchSummary()
        want = expand_forms(forms, include_amendments)
        tickers = [t.strip().upper() for t in tickers if t.strip()]
        ciks, missing = self.ticker_ciks(list(dict.fromkeys(tickers)), universe)
        for t in missing:
            summary.failed += 1
            summary.errors.append(f"{t}: ticker not found in the SEC ticker map or the universe file")
        refs: list[FilingRef] = []
        seen_cik: set[int] = set()
        seen_acc: set[str] = set()
        for t, cik in ciks.items():
            if cik in seen_cik:  # GOOG/GOOGL: one CIK, filings kept once (the loader maps CIK -> ticker)
                continue
            seen_cik.add(cik)
            try:
                blocks = self.submissions(cik, since, summary)
            except EdgarBlockedError:
                raise
            except EdgarFetchError as exc:
                summary.failed += 1
                summary.errors.append(f"{t}: {exc}")
                continue
            for b in blocks:
                for ref in select_filings(b, t, cik, want, since):
                    if ref.accession not in seen_acc:
                        seen_acc.add(ref.accession)
                        refs.append(ref)
        return refs

    def clean_partials(self) -> int:
        """Remove temp files a killed run left behind (only this tool's own ``.edgar-fetch-*.part``)."""
        n = 0
        if self.out.is_dir():
            for p in self.out.rglob(f"{PART_PREFIX}*{PART_SUFFIX}"):
                try:
                    p.unlink()
                    n += 1
                except OSError:
                    pass
        return n

    def run(
        self,
        tickers: Sequence[str],
        since: dt.date,
        forms: Sequence[str] = DEFAULT_FORMS,
        include_amendments: bool = True,
        universe: str | Path | None = None,
    ) -> FetchSummary:
        """Download what is missing; never raises for one bad filing (see ``summary.errors``).

        Raises
        ------
        EdgarFetchError
            The ticker map cannot be fetched (nothing else can be done).
        """
        summary = FetchSummary()
        self.clean_partials()
        try:
            refs = self.plan(tickers, since, forms, include_amendments, universe, summary)
        except EdgarBlockedError as exc:
            summary.aborted = str(exc)
            summary.requests = self.requests
            return summary
        todo = []
        for ref in refs:
            p = ref.path(self.out)
            if p.is_file() and p.stat().st_size > 0:
                summary.skipped += 1
            else:
                todo.append(ref)
        bar = None
        if self.progress and todo:
            from tqdm import tqdm

            bar = tqdm(total=len(todo), unit="filing", desc="EDGAR", file=sys.stderr, disable=None)
        in_a_row = 0
        try:
            for ref in todo:
                if bar is not None:
                    bar.set_postfix_str(f"{ref.ticker} {ref.form} {ref.accession}", refresh=False)
                try:
                    self.download(ref.url(self.base_url), ref.path(self.out), check=_check_submission)
                    summary.fetched += 1
                    in_a_row = 0
                except EdgarBlockedError as exc:
                    summary.failed += 1
                    summary.errors.append(f"{ref.ticker} {ref.form} {ref.accession}: {exc}")
                    summary.aborted = str(exc)
                    break
                except EdgarFetchError as exc:
                    summary.failed += 1
                    summary.errors.append(f"{ref.ticker} {ref.form} {ref.accession}: {exc}")
                    in_a_row += 1
                    if in_a_row >= self.max_consecutive_failures:
                        summary.aborted = f"{in_a_row} documents in a row failed; the server may be down"
                        break
                finally:
                    if bar is not None:
                        bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        summary.requests = self.requests
        return summary


def _check_submission(head: bytes) -> str | None:
    """Refuse a body the filings loader would reject (e.g. an HTML error page sent with 200)."""
    text = head[:5000].decode("utf-8", errors="replace")
    if "<SEC-HEADER>" in text or "ACCESSION NUMBER:" in text:
        return None
    return "not an EDGAR SGML submission (no <SEC-HEADER> in the first 5,000 bytes)"


def make_client(timeout: float = 60.0) -> httpx.Client:
    """An httpx client fit for EDGAR (compressed transfers, redirects followed)."""
    return httpx.Client(timeout=httpx.Timeout(timeout, connect=15.0), follow_redirects=True, headers={"Accept-Encoding": "gzip, deflate"})


__all__ = [
    "EdgarFetcher",
    "FetchSummary",
    "FilingRef",
    "RateLimiter",
    "EdgarFetchError",
    "EdgarHTTPError",
    "EdgarBlockedError",
    "MissingUserAgentError",
    "resolve_user_agent",
    "select_filings",
    "expand_forms",
    "read_universe_ciks",
    "make_client",
    "DEFAULT_BASE_URL",
    "DEFAULT_DATA_BASE_URL",
    "DEFAULT_FORMS",
    "DEFAULT_MAX_RPS",
    "USER_AGENT_ENV",
    "BASE_URL_ENV",
    "DATA_BASE_URL_ENV",
]
