"""The openai backend against a local fault-injecting server: retries, Retry-After, redaction, no
cached failures, and a re-run that sends only the missing prompts.

The server (http.server in a thread on 127.0.0.1) plays a script, one action per request, then a
default action; a prompt whose text holds ``POISON`` gets the poison action while it is set.
"""

import email.utils
import json
import logging
import random
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.http_retry import backoff_delay, parse_retry_after
from finrag_dagster.core.loop import DayData, LoopEnv, Variant, run_days
from finrag_dagster.core.reader.backends import (
    BackendConfig,
    BackendUnavailable,
    OpenAIBackend,
    Request,
    make_backend,
)
from finrag_dagster.core.reader.cache import PromptCache
from finrag_dagster.core.reader.prompt import AnchorInfo, EvidenceItem, build_prompt
from finrag_dagster.core.reader.redaction import redact_secrets
from finrag_dagster.core.reader.run import PromptTexts, ReaderIncomplete, read_day
from finrag_dagster.core.tables import Lake

KEY_ENV = "FINRAG_FAULT_TEST_KEY"
KEY = "loc4l-Secret-Value-9f3c"  # not sk- shaped: only the literal-value redaction can catch it when echoed bare
DAY = "2021-01-04"
ANSWER = json.dumps(
    {
        "event_type": "Earnings & Guidance",
        "signals": {h: {"signal": 1, "ids": [], "reason": "beat"} for h in ("1D", "3D", "5D")},
        "main_uncertainty": "",
    }
)
CLIENT_TIMEOUT = 0.4


class FaultServer:
    def __init__(self, script=(), default="ok", poison="500"):
        self.script = list(script)
        self.default = default
        self.poison = poison  # action for a POISON prompt; None: treat it like the others
        self.log: list[tuple[float, str, str]] = []  # (arrival time, action, user message)
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                auth = self.headers.get("Authorization", "")
                try:
                    user = json.loads(body)["messages"][-1]["content"]
                except (ValueError, KeyError, IndexError, TypeError):
                    user = ""
                with outer.lock:
                    if outer.poison and "POISON" in user:
                        action = outer.poison
                    else:
                        action = outer.script.pop(0) if outer.script else outer.default
                    outer.log.append((time.monotonic(), action, user))
                outer.act(self, action, auth)

            def finish(self):
                try:
                    super().finish()
                except OSError:
                    pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # dropped and timed-out connections are the point here

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def actions(self) -> list[str]:
        return [a for _, a, _ in self.log]

    def act(self, h: BaseHTTPRequestHandler, action: str, auth: str) -> None:
        def send(status: int, body: str, headers: dict | None = None):
            data = body.encode()
            h.send_response(status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                h.send_header(k, v)
            h.end_headers()
            h.wfile.write(data)

        token = auth.split(" ", 1)[-1]
        echo = json.dumps({"error": {"message": f"bad request, you sent Authorization: {auth}", "received_key": token}})
        try:
            if action == "ok":
                send(
                    200,
                    json.dumps(
                        {"choices": [{"message": {"role": "assistant", "content": ANSWER}}], "usage": {"prompt_tokens": 11, "completion_tokens": 7}}
                    ),
                )
            elif action == "timeout":
                time.sleep(CLIENT_TIMEOUT + 0.4)
                send(200, "{}")
            elif action == "malformed":
                send(200, '{"choices": [{"message": {"content": "tru')
            elif action == "nochoices":
                send(200, json.dumps({"choices": []}))
            elif action == "drop":
                h.close_connection = True
                h.connection.shutdown(socket.SHUT_RDWR)
                h.connection.close()
            elif action.startswith("429:"):  # 429:<Retry-After value>
                send(429, '{"error": "slow down"}', {"Retry-After": action[4:]})
            elif action in ("401", "500"):
                send(int(action), echo)
            else:
                send(int(action), '{"error": "client error"}')
        except OSError:
            pass  # the client gave up (timeout) or the socket was dropped on purpose


def prompt(headline: str = "Apple beats estimates"):
    return build_prompt(AnchorInfo("a0", "AAPL", "Apple Inc.", headline, "", DAY, "Earnings & Guidance", "after_close"), [], "card")


def backend(server: FaultServer, monkeypatch, **kw) -> OpenAIBackend:
    monkeypatch.setenv(KEY_ENV, KEY)
    cfg = {
        "backend": "openai",
        "model": "fault-test",
        "base_url": server.url,
        "api_key_env": KEY_ENV,
        "timeout_s": CLIENT_TIMEOUT,
        "retries": 6,
        "backoff_base_s": 0.01,
        "backoff_max_s": 1.0,
        "concurrency": 4,
    }
    be = make_backend(BackendConfig(**{**cfg, **kw}))
    be.rng = random.Random(0)
    return be


def anchors_frame(headlines: list[str]) -> pl.DataFrame:
    n = len(headlines)
    return pl.DataFrame(
        {
            "anchor_id": [f"a{i}" for i in range(n)],
            "ticker": ["AAPL"] * n,
            "headline": headlines,
            "summary": [""] * n,
            "event_type": ["Earnings & Guidance"] * n,
            "session": ["after_close"] * n,
        }
    )


NO_CONTEXT = pl.DataFrame(schema={"anchor_id": pl.Utf8, "passage_id": pl.Utf8, "position": pl.Int32})


def read(be, lake, anchors):
    return read_day(DAY, anchors, NO_CONTEXT, PromptTexts({}, {}, {}), be, PromptCache(lake, DAY), {"temperature": 0.0})


def test_json_schema_requests_carry_the_schema_without_unique_items():
    """vLLM's OpenAI server refuses a schema with ``uniqueItems`` (HTTP 400, "Grammar error:
    Unimplemented keys"), and no grammar enforces it: the request carries the prompt's schema without
    it, its ID enum kept; the prompt (and so the cache key) keeps the schema as it was."""
    p = build_prompt(
        AnchorInfo("a0", "AAPL", "Apple Inc.", "Apple beats estimates", "", DAY, "Earnings & Guidance", "after_close"),
        [EvidenceItem("n1", "news", "Apple beats", "Apple beat estimates.", "2021-01-01T12:00:00Z")],
        "card",
    )
    be = OpenAIBackend(BackendConfig(backend="openai", model="m", response_format="json_schema"))
    sent = be._body(Request(p))["response_format"]["json_schema"]["schema"]
    assert "uniqueItems" in json.dumps(p.schema) and "uniqueItems" not in json.dumps(sent)
    assert p.allowed_ids and json.dumps(p.allowed_ids) in json.dumps(sent)  # the ID enum is kept


def test_retries_through_every_fault_then_answers(monkeypatch):
    script = ["timeout", "500", "429:0", "malformed", "nochoices", "drop", "ok"]
    with FaultServer(script) as srv:
        be = backend(srv, monkeypatch)
        [g] = be.generate([Request(prompt())])
    assert g.error == "" and g.text == ANSWER and (g.prompt_tokens, g.output_tokens) == (11, 7)
    assert srv.actions[: len(script)] == script and len(srv.log) == len(script)
    assert (be.requests_sent, be.retries, be.failures) == (7, 6, 0)


def test_retry_after_is_honoured(monkeypatch):
    with FaultServer(["429:0.3", "ok"]) as srv:
        be = backend(srv, monkeypatch, backoff_base_s=0.001)
        [g] = be.generate([Request(prompt())])
    assert g.text == ANSWER
    (t0, a0, _), (t1, a1, _) = srv.log
    assert (a0, a1) == ("429:0.3", "ok") and t1 - t0 >= 0.3


def test_retry_after_forms_and_cap():
    assert parse_retry_after("0.3") == 0.3 and parse_retry_after(" 2 ") == 2.0 and parse_retry_after("-1") is None
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("inf") is None and parse_retry_after("1e3") is None  # malformed: the backoff decides
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    assert 3.0 <= parse_retry_after(when) <= 5.0
    assert parse_retry_after(email.utils.formatdate(time.time() - 60, usegmt=True)) == 0.0
    be = OpenAIBackend(BackendConfig(backend="openai", model="m", backoff_base_s=0.01, backoff_max_s=2.0))
    assert be.delay(0, retry_after=0.3) >= 0.3
    assert be.delay(0, retry_after=3600) == 2.0  # a server's Retry-After is capped by backoff_max_s


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_client_error_is_not_retried(status, monkeypatch):
    with FaultServer([str(status)], default="ok") as srv:
        be = backend(srv, monkeypatch)
        with pytest.raises(BackendUnavailable, match=f"HTTP {status}"):
            be.generate([Request(prompt())])
    assert len(srv.log) == 1 and (be.requests_sent, be.retries, be.failures) == (1, 0, 1)


def test_malformed_answers_are_failures_of_their_attempt(monkeypatch):
    with FaultServer([], default="malformed") as srv:
        be = backend(srv, monkeypatch, retries=2)
        with pytest.raises(BackendUnavailable, match="malformed") as e:
            be.generate([Request(prompt())])
    assert len(srv.log) == 3 and "after 3 attempts" in str(e.value)


def test_the_key_never_leaks_from_401_or_500_bodies(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    # 401: not retried, every request failed -> BackendUnavailable
    with FaultServer(["401"]) as srv:
        be = backend(srv, monkeypatch)
        with pytest.raises(BackendUnavailable) as e:
            be.generate([Request(prompt())])
    assert "HTTP 401" in str(e.value) and "[REDACTED]" in str(e.value)
    assert KEY not in str(e.value) and KEY not in repr(e.value)
    # 500 on one prompt (retried, then final): Generation.error, read_day's errors and the caller's error
    with FaultServer([], default="ok", poison="500") as srv:
        be = backend(srv, monkeypatch, retries=2)
        gens = be.generate([Request(prompt()), Request(prompt("POISON headline"))])
        assert gens[0].text == ANSWER and gens[1].error.startswith("HTTP 500") and "[REDACTED]" in gens[1].error
        out, st = read(be, Lake(tmp_path), anchors_frame(["Apple beats estimates", "POISON headline"]))
        incomplete = ReaderIncomplete(DAY, st)
    seen = [g.error for g in gens] + st.errors + list(st.failed_anchors.values()) + [str(incomplete), caplog.text]
    seen += [str(v) for col in out.columns for v in out[col].to_list()]
    assert st.failed_anchors and all(KEY not in s for s in seen)


def test_a_failing_prompt_is_not_cached_and_a_rerun_sends_only_it(tmp_path, monkeypatch):
    lake = Lake(tmp_path)
    anchors = anchors_frame(["Apple beats estimates", "POISON: Apple misses", "Apple raises guidance"])
    with FaultServer([], default="ok", poison="500") as srv:
        be = backend(srv, monkeypatch, retries=2)
        cache = PromptCache(lake, DAY)
        out, st = read_day(DAY, anchors, NO_CONTEXT, PromptTexts({}, {}, {}), be, cache, {"temperature": 0.0})
        assert set(st.failed_anchors) == {"a1"} and st.failed_anchors["a1"].startswith("HTTP 500")
        assert sorted(set(out["anchor_id"])) == ["a0", "a2"] and out.height == 6  # no neutral rows for a1
        assert (st.anchors, st.anchors_completed, st.failures, st.requests, st.retries) == (3, 2, 1, 5, 2)
        assert cache.flush() == 2  # the two answers, not the failure
        assert len(PromptCache(lake, DAY)._rows) == 2
        # the server recovers: a re-run sends only a1's prompt
        srv.poison, n0 = None, len(srv.log)
        out2, st2 = read(be, lake, anchors)
        new = srv.log[n0:]
        assert len(new) == 1 and "POISON" in new[0][2]
    assert not st2.failed_anchors and st2.cache_hits == 2 and st2.anchors_completed == 3 and out2.height == 9
    assert (st2.requests, st2.retries, st2.failures) == (1, 0, 0)
    assert out2.filter(pl.col("anchor_id") != "a1").equals(out)


def test_the_loop_flushes_successes_then_fails_the_day_and_a_rerun_completes_it(tmp_path, monkeypatch):
    lake = Lake(tmp_path)
    anchors = anchors_frame(["Apple beats estimates", "POISON: Apple misses"])
    ev = {f"p{i}": EvidenceItem(f"p{i}", "news", f"t{i}", "Apple beat estimates.", "2021-01-01T00:00:00+00:00") for i in range(2)}
    cands = pl.DataFrame(
        {
            "anchor_id": ["a0", "a1"],
            "passage_id": ["p0", "p1"],
            "rank": [1, 1],
            "bm25": [0.0, 0.0],
            "dense": [0.0, 0.0],
            "relevance": [0.5, 0.5],
            "is_peer": [False, False],
            "source_family": ["news", "news"],
            "ticker": ["AAPL", "AAPL"],
        },
        schema_overrides={"rank": pl.Int32},
    )
    with FaultServer([], default="ok", poison="500") as srv:
        be = backend(srv, monkeypatch, retries=1)
        env = LoopEnv(
            cal=nyse(),
            day_data=lambda d: DayData(anchors, cands, {}),
            split_start=lambda d: DAY,
            class_weights=lambda s: {},
            labels_of=lambda d: None,
            past_of=lambda d, v: None,
            evidence=ev,
            companies={},
            backend=be,
            cache_of=lambda d: PromptCache(lake, d),
            decoding={"temperature": 0.0},
        )
        with pytest.raises(ReaderIncomplete, match=r"1 of 2 anchors failed on 2021-01-04") as e:
            run_days([DAY], Variant("no_memory", "no_memory", 0.0), env, None)
        assert "a1: HTTP 500" in str(e.value) and KEY not in str(e.value)
        assert len(PromptCache(lake, DAY)._rows) == 1  # a0's answer was flushed before the day failed
        srv.poison, n0 = None, len(srv.log)
        [res] = run_days([DAY], Variant("no_memory", "no_memory", 0.0), env, None)
        assert len(srv.log) - n0 == 1 and "POISON" in srv.log[-1][2]
    assert res.outputs.height == 6 and res.stats.anchors_completed == 2 and res.stats.cache_hits == 1


def test_backoff_is_jittered_exponential_and_capped():
    rng = random.Random(42)
    ds = [backoff_delay(a, 0.5, 30.0, rng) for a in range(10)]
    assert len(set(ds)) == len(ds)  # not all equal: every attempt draws its own delay
    assert all(0.0 <= d <= min(30.0, 0.5 * 2**a) for a, d in enumerate(ds))
    assert ds == [backoff_delay(a, 0.5, 30.0, r) for r in [random.Random(42)] for a in range(10)]  # a seed reproduces them

    def mean(a):
        return sum(backoff_delay(a, 0.5, 30.0, rng) for _ in range(400)) / 400

    assert mean(0) < mean(2) < mean(4) and mean(12) <= 30.0  # grows, then stays under the cap
    be = OpenAIBackend(BackendConfig(backend="openai", model="m", backoff_base_s=0.5, backoff_max_s=4.0))
    be.rng = random.Random(1)
    delays = [be.delay(a) for a in range(8)]
    assert len(set(delays)) == 8 and max(delays) <= 4.0


def test_redact_secrets():
    s = 'Authorization: Bearer abc.DEF-123, key=sk-proj-AbCdEf123456 url?api_key=zz9&x=1 {"api_key": "qq"} raw my key!'
    r = redact_secrets(s, ["my key!"])
    for secret in ("abc.DEF-123", "sk-proj-AbCdEf123456", "zz9", "qq", "my key!"):
        assert secret not in r
    assert r.count("[REDACTED]") == 5 and "Bearer [REDACTED]" in r and "x=1" in r
    assert redact_secrets("x%2By and x+y", ["x+y"]) == "[REDACTED] and [REDACTED]"  # URL-escaped form too
    assert redact_secrets("HTTP 500: upstream error", ["k"]) == "HTTP 500: upstream error"


def test_redact_secrets_in_every_encoding_a_server_may_echo():
    key = 'sk/Ab+c d"é'
    echoes = [
        '{"error": "bad key sk\\/Ab+c d\\"\\u00e9"}',  # JSON with / as \/ (PHP, some proxies)
        '{"error": "bad key sk/Ab+c d\\"\\u00e9"}',  # JSON, ASCII only
        '{"error": "bad key sk/Ab+c d\\"é"}',  # JSON, UTF-8 kept
        "key=sk%2FAb%2Bc%20d%22%C3%A9",  # URL-quoted
        "key=sk/Ab%2Bc%20d%22%C3%A9",  # URL-quoted, / kept
        "q=sk%2FAb%2Bc+d%22%C3%A9",  # form-encoded
        "".join(f"\\u{ord(c):04x}" for c in key),  # every character \uXXXX
    ]
    for echo in echoes:
        out = redact_secrets(echo, [key])
        assert "[REDACTED]" in out and "Ab" not in out, (echo, out)
    assert redact_secrets("", ["k"]) == ""


def test_redact_secrets_echoed_in_base64():
    """A server that echoes the credential base64-encoded (an HTTP Basic header, a debug dump): the
    key alone, ``user:key`` for any user (each of the three byte alignments), URL-safe alphabet."""
    import base64

    key = "zq-SeCrEt/tok+en=9981~"
    for raw in (key, f":{key}", f"u:{key}", f"us:{key}", f"someone@example.com:{key}"):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            b = enc(raw.encode()).decode()
            out = redact_secrets(f'{{"error": "bad credential", "echo": "{b}"}}', [key])
            assert b not in out and out == '{"error": "bad credential", "echo": "[REDACTED]"}', (raw, out)
    other = base64.b64encode(b"user:another-secret-entirely").decode()
    assert redact_secrets(f"echo {other}", [key]) == f"echo {other}"  # another value's base64 stays
    assert redact_secrets("aGVsbG8gd29ybGQ=", ["k"]) == "aGVsbG8gd29ybGQ="  # a 1-byte key has no core to match
