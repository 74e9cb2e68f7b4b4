"""EDGAR downloader against a local stand-in for www.sec.gov / data.sec.gov (no internet).

The server serves the recorded responses in tests/data/edgar_fetch (see its PROVENANCE.md) under
``/www`` (www.sec.gov) and ``/data`` (data.sec.gov), records every request's path, arrival time
and User-Agent, and can be told to fail a path (429/5xx/403, a body cut short, an HTML page).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from finrag_dagster.core.http_retry import parse_retry_after
from finrag_dagster.sources.edgar import fetch as ef
from finrag_dagster.sources.edgar import fetch_client
from finrag_dagster.sources.edgar.fetch import (
    EdgarFetcher,
    EdgarHTTPError,
    FetchPolicy,
    FilingRef,
    MissingUserAgentError,
    RateLimiter,
    expand_forms,
    resolve_user_agent,
    select_filings,
)

FIX = Path(__file__).resolve().parents[1] / "data" / "edgar_fetch"
ROOTS = {"www": FIX / "www.sec.gov", "data": FIX / "data.sec.gov"}
UA = "finrag test-suite tests@example.com"
SINCE = dt.date(2023, 1, 1)
FORMS = ("10-Q", "10-K")  # the fixture has SGML bodies for these (its 8-K rows have none)
SUB = FIX / "data.sec.gov" / "submissions" / "CIK0000320193.json"
PAGE = FIX / "data.sec.gov" / "submissions" / "CIK0000320193-submissions-001.json"
UTC = dt.timezone.utc

pytestmark = pytest.mark.timeout(120)


def _rows(doc: dict) -> list[dict]:
    block = doc["filings"]["recent"] if "filings" in doc else doc
    return [dict(zip(block, vals)) for vals in zip(*block.values())]


ALL_ROWS = _rows(json.loads(SUB.read_text())) + _rows(json.loads(PAGE.read_text()))
EXPECTED = {r["accessionNumber"]: r for r in ALL_ROWS if r["form"] in FORMS}  # all accepted after SINCE
assert len(EXPECTED) == 8


def doc_path(acc: str) -> str:
    return f"/www/Archives/edgar/data/320193/{acc.replace('-', '')}/{acc}.txt"


# ============================================================================ the local server
@dataclass
class Canned:
    status: int
    headers: dict = field(default_factory=dict)
    body: bytes = b""
    cut_short: bool = False  # announce more bytes than sent, then hang up


class FakeEdgar:
    def __init__(self) -> None:
        self.log: list[tuple[str, float, str | None]] = []
        self.queued: dict[str, list[Canned]] = {}
        self.always: dict[str, Canned] = {}
        self.lock = threading.Lock()
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                t = time.monotonic()
                path = self.path.split("?")[0]
                with srv.lock:
                    srv.log.append((path, t, self.headers.get("User-Agent")))
                    q = srv.queued.get(path)
                    canned = q.pop(0) if q else srv.always.get(path)
                if canned is None:
                    canned = srv.serve_file(path)
                self.send_response(canned.status)
                for k, v in canned.headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(canned.body) + (4096 if canned.cut_short else 0)))
                self.end_headers()
                self.wfile.write(canned.body)
                self.wfile.flush()
                if canned.cut_short:
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @staticmethod
    def serve_file(path: str) -> Canned:
        parts = path.strip("/").split("/", 1)
        root = ROOTS.get(parts[0])
        if root is not None and len(parts) == 2:
            f = (root / parts[1]).resolve()
            if f.is_file() and f.is_relative_to(root.resolve()):
                ctype = "application/json" if f.suffix == ".json" else "text/plain"
                return Canned(200, {"Content-Type": ctype}, f.read_bytes())
        return Canned(404, {"Content-Type": "text/plain"}, b"Not Found")

    def paths(self) -> list[str]:
        with self.lock:
            return [p for p, _, _ in self.log]

    def times(self, path: str | None = None) -> list[float]:
        with self.lock:
            return [t for p, t, _ in self.log if path is None or p == path]

    def doc_requests(self) -> list[str]:
        return [p for p in self.paths() if "/Archives/" in p]

    def clear(self) -> None:
        with self.lock:
            self.log.clear()
            self.queued.clear()
            self.always.clear()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeEdgar()
    yield s
    s.close()


@pytest.fixture
def make(server, tmp_path):
    """EdgarFetcher factory against the local server (fast limits unless told otherwise)."""
    clients = []

    def _make(out: Path | None = None, **kw) -> EdgarFetcher:
        client = httpx.Client(timeout=10)
        clients.append(client)
        kw.setdefault("max_rps", 1000)
        kw.setdefault("backoff_base", 0.01)
        pol = {k: kw.pop(k) for k in list(kw) if k in FetchPolicy.__dataclass_fields__}
        policy = FetchPolicy(base_url=f"{server.url}/www", data_base_url=f"{server.url}/data", **pol)
        return EdgarFetcher(client, UA, out or tmp_path / "edgar", policy, **kw)

    yield _make
    for c in clients:
        c.close()


class Sleeps(list):
    """Records retry waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def part_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".part") or ".edgar-fetch-" in p.name]


def downloaded(out: Path) -> dict[str, Path]:
    return {p.parent.name: p for p in (out / "sec-edgar-filings").rglob("full-submission.txt")}


# ============================================================================ downloads
def test_downloads_layout_and_user_agent_on_every_request(make, server, tmp_path):
    out = tmp_path / "edgar"
    s = make(out).run(["aapl"], SINCE, FORMS)
    assert (s.fetched, s.skipped, s.failed, s.aborted, s.errors) == (8, 0, 0, None, [])
    assert s.submissions_fetched == 2  # main document + the overflow page that reaches SINCE
    got = downloaded(out)
    assert set(got) == set(EXPECTED)
    for acc, p in got.items():
        form = EXPECTED[acc]["form"]
        assert p == out / "sec-edgar-filings" / "AAPL" / form / acc / "full-submission.txt"
        assert p.read_bytes() == (FIX / "www.sec.gov" / doc_path(acc)[len("/www/") :]).read_bytes()
    # submissions JSON kept byte for byte where the loader's glob finds it; the ticker map beside it
    assert (out / "submissions" / "CIK0000320193.json").read_bytes() == SUB.read_bytes()
    assert (out / "submissions" / PAGE.name).read_bytes() == PAGE.read_bytes()
    assert (out / "company_tickers.json").is_file()
    assert sorted(p.name for p in (out / "submissions").iterdir()) == [PAGE.name, SUB.name]
    # requests: exactly what is needed, each with the configured User-Agent
    with server.lock:
        log = list(server.log)
    assert [ua for _, _, ua in log] == [UA] * len(log)
    paths = [p for p, _, _ in log]
    assert paths[:2] == ["/www/files/company_tickers.json", "/data/submissions/CIK0000320193.json"]
    assert sorted(server.doc_requests()) == sorted(doc_path(a) for a in EXPECTED)
    assert len(paths) == 2 + 1 + 8 and s.requests == len(paths)
    assert part_files(out) == []


def test_never_more_than_max_rps_in_any_one_second_window(make, server, tmp_path):
    max_rps = 5
    s = make(max_rps=max_rps).run(["AAPL"], SINCE, FORMS)
    assert s.fetched == 8 and s.failed == 0
    ts = sorted(server.times())
    assert len(ts) == 11
    for t in ts:  # every window [t, t + 1 s) that starts at a request, measured where the SEC would
        assert sum(1 for u in ts if t <= u < t + 1.0) <= max_rps
    assert ts[-1] - ts[0] >= (len(ts) - 1) / max_rps  # evenly spaced, not bursts


def test_since_is_acceptance_day_and_skips_pages_that_end_before_it(make, server, tmp_path):
    out = tmp_path / "edgar"
    since = dt.date(2023, 6, 1)
    s = make(out).run(["AAPL"], since, FORMS)
    want = {a for a, r in EXPECTED.items() if r["acceptanceDateTime"] >= "2023-06-01"}
    assert len(want) == 6 and set(downloaded(out)) == want and s.fetched == 6
    assert "/data/submissions/" + PAGE.name not in server.paths()  # the page ends 2023-02-03
    assert s.submissions_fetched == 1


def test_forms_filter_skips_other_forms(make, server, tmp_path):
    out = tmp_path / "edgar"
    s = make(out).run(["AAPL"], SINCE, ["10-K"], include_amendments=True)
    want = {a for a, r in EXPECTED.items() if r["form"] == "10-K"}
    assert set(downloaded(out)) == want and s.fetched == 2
    assert all("/Archives/" not in p or p in {doc_path(a) for a in want} for p in server.paths())


# ============================================================================ retries
def test_429_with_retry_after_and_503_are_retried_then_succeed(make, server, tmp_path):
    a429, a503 = "0000320193-23-000077", "0000320193-24-000069"
    server.queued[doc_path(a429)] = [Canned(429, {"Retry-After": "1"}, b"slow down")]
    server.queued[doc_path(a503)] = [Canned(503, {}, b"busy"), Canned(503, {}, b"busy")]
    waits: list[float] = []

    def sleep(x):  # really wait, so the server sees the pause
        waits.append(x)
        time.sleep(x)

    out = tmp_path / "edgar"
    s = make(out, backoff_base=0.05, sleep=sleep).run(["AAPL"], SINCE, FORMS)
    assert (s.fetched, s.failed, s.errors) == (8, 0, [])
    assert sorted(waits) == [0.05, 0.1, 1.0]  # Retry-After honoured; exponential backoff otherwise
    t429 = server.times(doc_path(a429))
    t503 = server.times(doc_path(a503))
    assert len(t429) == 2 and t429[1] - t429[0] >= 1.0
    assert len(t503) == 3 and t503[1] - t503[0] >= 0.05 and t503[2] - t503[1] >= 0.1
    assert downloaded(out)[a429].stat().st_size == 1000 and downloaded(out)[a503].stat().st_size == 1000


def test_persistent_500_gives_up_after_bounded_retries_naming_the_url(make, server, tmp_path):
    url_path = doc_path("0000320193-24-000006")
    server.always[url_path] = Canned(500, {}, b"oops")
    sleeps = Sleeps()
    f = make(max_retries=3, backoff_base=1.0, backoff_cap=3.0, sleep=sleeps)
    with pytest.raises(EdgarHTTPError) as ei:
        f.get_bytes(server.url + url_path)
    msg = str(ei.value)
    assert server.url + url_path in msg and "500" in msg and "4 attempts" in msg
    assert ei.value.status == 500
    assert server.paths() == [url_path] * 4  # 1 try + 3 retries, then stop
    assert sleeps == [1.0, 2.0, 3.0]  # 1, 2, 4 capped at 3


def test_dropped_connection_mid_body_is_retried_and_never_leaves_a_half_file(make, server, tmp_path):
    acc = "0000320193-23-000106"
    body = (FIX / "www.sec.gov" / doc_path(acc)[len("/www/") :]).read_bytes()
    server.queued[doc_path(acc)] = [Canned(200, {}, body[:300], cut_short=True)]
    out = tmp_path / "edgar"
    s = make(out).run(["AAPL"], SINCE, FORMS)
    assert s.fetched == 8 and s.failed == 0
    assert len(server.times(doc_path(acc))) == 2
    assert downloaded(out)[acc].read_bytes() == body
    assert part_files(out) == []


def test_retry_after_http_date_and_bad_values():
    now = 1_700_000_000.0
    date = "Tue, 14 Nov 2023 22:13:40 GMT"  # = now + 20 s
    assert parse_retry_after(date, now) == pytest.approx(20.0)
    assert parse_retry_after("7", now) == 7.0
    assert parse_retry_after(None, now) is None and parse_retry_after("soon", now) is None


def test_too_long_retry_after_stops_the_run_instead_of_waiting(make, server, tmp_path):
    server.always["/data/submissions/CIK0000320193.json"] = Canned(429, {"Retry-After": "3600"})
    sleeps = Sleeps()
    s = make(sleep=sleeps).run(["AAPL"], SINCE, FORMS)
    assert s.aborted and "3600" in s.aborted and "CIK0000320193.json" in s.aborted
    assert sleeps == [] and s.fetched == 0 and not s.ok
    assert server.paths().count("/data/submissions/CIK0000320193.json") == 1


def test_403_stops_the_run_at_once_with_a_user_agent_hint(make, server, tmp_path):
    server.always["/data/submissions/CIK0000320193.json"] = Canned(403, {}, b"Undeclared Automated Tool")
    s = make(sleep=Sleeps()).run(["AAPL", "MSFT"], SINCE, FORMS)
    assert s.aborted and "User-Agent" in s.aborted and "403" in s.aborted
    assert server.paths() == ["/www/files/company_tickers.json", "/data/submissions/CIK0000320193.json"]


def test_html_error_page_served_as_200_is_not_saved(make, server, tmp_path):
    acc = "0000320193-24-000081"
    server.always[doc_path(acc)] = Canned(200, {"Content-Type": "text/html"}, b"<html>Request Rate Threshold Exceeded</html>")
    out = tmp_path / "edgar"
    s = make(out).run(["AAPL"], SINCE, FORMS)
    assert s.fetched == 7 and s.failed == 1 and "SEC-HEADER" in s.errors[0] and doc_path(acc) in s.errors[0]
    assert acc not in downloaded(out) and part_files(out) == []


# ============================================================================ resumable
def test_second_run_requests_nothing(make, server, tmp_path):
    out = tmp_path / "edgar"
    assert make(out).run(["AAPL"], SINCE, FORMS).fetched == 8
    server.clear()
    s = make(out).run(["AAPL"], SINCE, FORMS)
    assert (s.fetched, s.skipped, s.failed, s.requests) == (0, 8, 0, 0)
    assert server.paths() == [] and s.submissions_reused == 2
    # stale submissions JSON (age limit 0) is fetched again, documents still are not
    s = make(out, submissions_max_age_s=0).run(["AAPL"], SINCE, FORMS)
    assert s.skipped == 8 and s.submissions_fetched == 2
    assert server.doc_requests() == [] and "/www/files/company_tickers.json" not in server.paths()


def test_interrupted_run_resumes_with_only_the_missing_documents(make, server, tmp_path):
    out = tmp_path / "edgar"
    bad = "0000320193-24-000069"
    server.always[doc_path(bad)] = Canned(500, {}, b"down")
    s = make(out, max_retries=2, sleep=Sleeps()).run(["AAPL"], SINCE, FORMS)
    assert (s.fetched, s.skipped, s.failed) == (7, 0, 1)
    assert len(s.errors) == 1 and doc_path(bad) in s.errors[0] and "after 3 attempts" in s.errors[0]
    assert bad not in downloaded(out) and part_files(out) == []
    assert not (out / "sec-edgar-filings" / "AAPL" / "10-Q" / bad).exists()  # no empty folder either
    assert not s.ok and "1 failed" in s.line()

    server.clear()  # the server is healthy again
    s = make(out).run(["AAPL"], SINCE, FORMS)
    assert (s.fetched, s.skipped, s.failed) == (1, 7, 0)
    assert server.doc_requests() == [doc_path(bad)]
    assert set(downloaded(out)) == set(EXPECTED)


def test_crash_mid_run_leaves_no_partial_file_and_rerun_completes(make, server, tmp_path, monkeypatch):
    out = tmp_path / "edgar"
    real_replace = os.replace
    calls = {"n": 0}

    def crashing_replace(src, dst):
        if str(dst).endswith("full-submission.txt"):
            calls["n"] += 1
            if calls["n"] == 3:
                raise KeyboardInterrupt  # killed between receiving a body and renaming it
        return real_replace(src, dst)

    monkeypatch.setattr(fetch_client.os, "replace", crashing_replace)  # the rename EdgarHTTP.download makes
    with pytest.raises(KeyboardInterrupt):
        make(out).run(["AAPL"], SINCE, FORMS)
    monkeypatch.setattr(fetch_client.os, "replace", real_replace)
    assert len(downloaded(out)) == 2 and part_files(out) == []
    # a temp file left by a hard kill (SIGKILL) is cleaned by the next run
    stale = out / "sec-edgar-filings" / "AAPL" / "10-Q" / f"{ef.PART_PREFIX}full-submission.txt.x{ef.PART_SUFFIX}"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_bytes(b"half")
    server.clear()
    s = make(out).run(["AAPL"], SINCE, FORMS)
    assert (s.fetched, s.skipped, s.failed) == (6, 2, 0)
    assert len(server.doc_requests()) == 6 and set(downloaded(out)) == set(EXPECTED)
    assert part_files(out) == []


# ============================================================================ tickers, forms, limiter, user agent
def test_universe_file_gives_ciks_without_the_sec_ticker_map(make, server, tmp_path):
    out = tmp_path / "edgar"
    f = make(out)
    ciks, missing = f.ticker_ciks(["AAPL", "GOOG", "BRK.B"], universe=FIX / "universe.csv")
    assert ciks == {"AAPL": 320193, "GOOG": 1652044, "BRK.B": 1067983} and missing == []
    assert server.paths() == ["/www/files/company_tickers.json"]  # only for BRK.B, not in the universe
    server.clear()
    ciks, missing = f.ticker_ciks(["AAPL", "NOPE"], universe=None)  # map cached on disk now
    assert ciks == {"AAPL": 320193} and missing == ["NOPE"] and server.paths() == []
    # an unknown ticker and a cached map older than the age limit: the map is fetched once more
    old = time.time() - 2 * 86400
    os.utime(out / "company_tickers.json", (old, old))
    assert f.ticker_ciks(["AAPL"])[1] == [] and server.paths() == []  # all found: old copy is fine
    ciks, missing = f.ticker_ciks(["AAPL", "NOPE"])
    assert missing == ["NOPE"] and server.paths() == ["/www/files/company_tickers.json"]


def test_unknown_ticker_and_missing_submissions_are_reported_not_fatal(make, server, tmp_path):
    s = make().run(["AAPL", "NOPE", "MSFT"], SINCE, FORMS)  # MSFT: no submissions JSON on the server (404)
    assert s.fetched == 8 and s.failed == 2 and not s.ok
    assert any(e.startswith("NOPE:") and "not found" in e for e in s.errors)
    assert any(e.startswith("MSFT:") and "CIK0000789019.json" in e and "404" in e for e in s.errors)


def test_select_filings_forms_amendments_and_eastern_day_boundary():
    block = {
        "accessionNumber": [
            "0000000001-23-000001",
            "0000000001-23-000002",
            "0000000001-23-000003",
            "0000000001-23-000004",
            "0000000001-23-000005",
            "bad",
        ],
        "form": ["10-K/A", "8-K/A", "SC 13G/A", "10-Q", "8-K", "8-K"],
        "acceptanceDateTime": [
            "2023-01-01T04:59:59.000Z",
            "2023-01-01T05:00:00.000Z",
            "2023-06-01T12:00:00.000Z",
            "",
            "2023-03-01T12:00:00.000Z",
            "2023-03-01T12:00:00.000Z",
        ],
        "filingDate": ["2022-12-31", "2023-01-01", "2023-06-01", "2023-01-03", "2023-03-01", "2023-03-01"],
    }
    forms = expand_forms(["8-K", "10-q", "10-K"])
    assert forms == ("8-K", "8-K/A", "10-Q", "10-Q/A", "10-K", "10-K/A")
    refs = select_filings(block, "XYZ", 1, forms, dt.date(2023, 1, 1))
    # 10-K/A at 23:59:59 ET on 31 Dec is before the day; SC 13G/A not asked; "bad" is no accession
    assert [r.accession[-1] for r in refs] == ["2", "4", "5"]
    amend = refs[0]
    assert amend.form == "8-K/A" and amend.folder_form == "8-K"  # sec-edgar-downloader keeps /A with its form
    assert amend.path(Path("o")) == Path("o/sec-edgar-filings/XYZ/8-K/0000000001-23-000002/full-submission.txt")
    assert amend.url("http://h/") == "http://h/Archives/edgar/data/1/000000000123000002/0000000001-23-000002.txt"
    assert [r.form for r in select_filings(block, "XYZ", 1, expand_forms(["8-K"], False), dt.date(2023, 1, 1))] == ["8-K"]


def test_rate_limiter_spacing_with_a_fake_clock_and_across_threads():
    now = [0.0]
    lim = RateLimiter(10, headroom=0.0, clock=lambda: now[0], sleep=lambda x: now.__setitem__(0, now[0] + x))
    starts = [lim.acquire() for _ in range(25)]
    assert starts == pytest.approx([i * 0.1 for i in range(25)])
    for t in starts:
        assert sum(1 for u in starts if t <= u < t + 1.0 - 1e-9) <= 10
    # shared by threads: granted start times stay spaced by the interval
    lim = RateLimiter(50)
    granted: list[float] = []
    lock = threading.Lock()

    def worker():
        for _ in range(5):
            g = lim.acquire()
            with lock:
                granted.append(g)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    granted.sort()
    assert len(granted) == 20
    assert min(b - a for a, b in zip(granted, granted[1:])) >= lim.interval - 1e-9
    with pytest.raises(ValueError):
        RateLimiter(0)


def test_missing_or_bad_user_agent_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(MissingUserAgentError) as ei:
        resolve_user_agent(None, environ={})
    msg = str(ei.value)
    assert "--user-agent" in msg and "FINRAG_SEC_USER_AGENT" in msg and "@" in msg
    with pytest.raises(MissingUserAgentError, match="no contact email"):
        resolve_user_agent("my-scraper/1.0", environ={})
    assert resolve_user_agent(None, environ={"FINRAG_SEC_USER_AGENT": UA}) == UA
    assert resolve_user_agent("Jane Doe jane@example.com", environ={"FINRAG_SEC_USER_AGENT": UA}) == "Jane Doe jane@example.com"
    with httpx.Client() as c, pytest.raises(MissingUserAgentError):
        EdgarFetcher(c, "", tmp_path)


# ============================================================================ the loader reads it
def test_filings_loader_reads_what_the_downloader_wrote(make, tmp_path):
    from finrag_dagster.sources.edgar import load_filings
    from finrag_dagster.sources.universe import load_universe

    out = tmp_path / "edgar"
    assert make(out).run(["AAPL"], SINCE, FORMS).fetched == 8
    uni = load_universe(FIX / "universe.csv")
    want = {a: dt.datetime.fromisoformat(r["acceptanceDateTime"].replace("Z", "+00:00")) for a, r in EXPECTED.items()}

    # headers alone: the SGML <ACCEPTANCE-DATETIME> (US/Eastern) gives the same instants as the JSON (UTC)
    hdr = load_filings([out / "sec-edgar-filings"], [out / "sec-edgar-filings"], uni)
    assert hdr.quarantine.height == 0 and hdr.accepted.height == 8
    for row in hdr.accepted.iter_rows(named=True):
        assert row["public_time"] == want[row["accession"]]
        assert row["ticker"] == "AAPL" and row["form_type"] == EXPECTED[row["accession"]]["form"]
        assert row["acceptance_source"] == "sgml_header"
    q1 = hdr.accepted.filter(hdr.accepted["accession"] == "0000320193-23-000006").row(0, named=True)
    assert q1["public_time"] == dt.datetime(2023, 2, 2, 23, 1, 30, tzinfo=UTC)  # 18:01:30 ET
    assert q1["date"] == dt.date(2023, 2, 3)  # after the close: next trading day

    # the README's configuration: submissions JSON (incl. the overflow page) + the folders
    res = load_filings([str(out / "submissions" / "*.json"), out / "sec-edgar-filings"], [out / "sec-edgar-filings"], uni)
    acc = {r["accession"]: r for r in res.accepted.iter_rows(named=True)}
    n_json = sum(1 for r in ALL_ROWS if r["form"] in ("8-K", "10-Q", "10-K"))
    assert len(acc) == n_json == 12  # 8-Ks come from the JSON alone (their bodies were not downloaded)
    for a, t in want.items():
        assert acc[a]["public_time"] == t
        assert acc[a]["acceptance_source"] == "sgml_header|submissions_json"
    assert res.quarantine["reason"].to_list().count("form not used") == 3  # CORRESP and two Form 4s


# ============================================================================ CLI
def _env_without_ua() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (ef.USER_AGENT_ENV, ef.BASE_URL_ENV, ef.DATA_BASE_URL_ENV)}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2]) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_cli_without_user_agent_exits_with_a_clear_message(tmp_path):
    out = tmp_path / "edgar"
    r = subprocess.run(
        [sys.executable, "-m", "finrag_dagster.cli.fetch", "edgar", "--tickers", "AAPL", "--since", "2023-01-01", "--out", str(out), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env_without_ua(),
    )
    assert r.returncode == 2, r.stderr
    assert "User-Agent" in r.stderr and "FINRAG_SEC_USER_AGENT" in r.stderr and "--user-agent" in r.stderr
    assert "Traceback" not in r.stderr
    assert not out.exists()


def test_cli_downloads_then_skips(server, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from finrag_dagster.cli.fetch import fetch_app

    for k in (ef.USER_AGENT_ENV, ef.BASE_URL_ENV, ef.DATA_BASE_URL_ENV):
        monkeypatch.delenv(k, raising=False)
    out = tmp_path / "edgar"
    args = [
        "edgar",
        "--tickers",
        "aapl",
        "-t",
        "GOOG,",
        "--since",
        "2023-01-01",
        "--forms",
        "10-Q,10-K",
        "--out",
        str(out),
        "--universe",
        str(FIX / "universe.csv"),
        "--base-url",
        f"{server.url}/www",
        "--data-base-url",
        f"{server.url}/data",
        "--no-progress",
    ]
    runner = CliRunner()
    r = runner.invoke(fetch_app, args, env={ef.USER_AGENT_ENV: UA})
    # GOOG has no submissions JSON on the local server: reported, exit code 1, AAPL still complete
    assert r.exit_code == 1, r.output
    assert "8 fetched, 0 skipped (already present), 1 failed" in r.output and "CIK0001652044.json" in r.output
    assert "/www/files/company_tickers.json" not in server.paths()  # CIKs came from the universe file
    assert {ua for _, _, ua in server.log} == {UA}
    args_aapl = [a if a != "GOOG," else "AAPL" for a in args]
    r = runner.invoke(fetch_app, args_aapl, env={ef.USER_AGENT_ENV: UA})
    assert r.exit_code == 0, r.output
    assert "0 fetched, 8 skipped (already present), 0 failed" in r.output
    r = runner.invoke(fetch_app, args_aapl + ["--max-rps", "50"], env={ef.USER_AGENT_ENV: UA})
    assert r.exit_code == 2 and "--max-rps" in r.output


def test_filingref_folder_form_for_odd_forms():
    assert FilingRef("A", 1, "10-K/A", "0000000001-23-000001", "").folder_form == "10-K"
    assert FilingRef("A", 1, "SC 13G/A", "0000000001-23-000001", "").folder_form == "SC 13G"
