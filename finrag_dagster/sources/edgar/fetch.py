"""A polite EDGAR downloader: submissions JSON and full submissions, in the layout ``sources/edgar/`` reads.

It writes the SEC's ticker -> CIK map, the submissions JSON (and overflow pages) and each selected
filing's ``full-submission.txt`` in sec-edgar-downloader's layout under ``out``, and follows the
SEC's fair-access rules: a declared User-Agent (no default), at most ``max_rps`` requests per
second over the whole run (:class:`RateLimiter`), bounded retries honouring ``Retry-After``, and
nothing fetched twice (atomic renames; recent submissions JSON reused). What it writes, the rules
and how to point ``filings_index`` / ``filings_text`` at the download: docs/edgar_fetch.md.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path
from typing import Sequence

from .fetch_client import EdgarHTTP, FetchPolicy, FetchSummary
from .fetch_http import (
    BASE_URL_ENV,
    DATA_BASE_URL_ENV,
    DEFAULT_BASE_URL,
    DEFAULT_DATA_BASE_URL,
    DEFAULT_MAX_RPS,
    USER_AGENT_ENV,
    EdgarBlockedError,
    EdgarFetchError,
    EdgarHTTPError,
    MissingUserAgentError,
    RateLimiter,
    make_client,
    resolve_user_agent,
)
from .fetch_layout import (
    DEFAULT_FORMS,
    PART_PREFIX,
    PART_SUFFIX,
    SUBMISSIONS_DIR,
    TICKERS_FILE,
    FilingRef,
    _norm_ticker,
    _sec_ticker_map,
    expand_forms,
    read_universe_ciks,
    select_filings,
)


class EdgarFetcher(EdgarHTTP):
    """Downloads submissions JSON and full submissions from EDGAR into ``out``.

    ``client``: the HTTP client (its own headers are kept; the User-Agent is set on every request).
    ``user_agent``: "Name contact@email" (see :func:`resolve_user_agent`). ``out``: the output folder
    (layout in the module docstring). ``policy``: the addresses, pace and retries (:class:`FetchPolicy`).
    ``limiter``: a shared :class:`RateLimiter` (default: one at ``policy.max_rps``). ``sleep``: used for
    retry waits (tests inject a recorder; ``limiter`` has its own clock). ``now``: the wall clock
    (seconds since the epoch) for file ages and HTTP-date Retry-After.
    """

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


__all__ = [
    "EdgarFetcher",
    "FetchPolicy",
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
    "PART_PREFIX",
    "PART_SUFFIX",
]
