"""Running it in production the Dagster way (docs/production.md), the parts that need no lake:
retries against a local server, the failure alert's message, pools, freshness."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dagster as dg
import pytest

from finrag_dagster.core.reader.backends import BackendConfig, OpenAIBackend, Request
from finrag_dagster.core.reader.prompt import Prompt
from finrag_dagster.core.settings import Settings
from finrag_dagster.defs.build import build_definitions
from finrag_dagster.defs.retries import no_retry_on_bad_requests, reader_retry_policy
from tests.instance import pooled_instance

ANSWER = json.dumps({"choices": [{"message": {"content": '{"ok": true}'}}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})


class Scripted:
    """An HTTP server on 127.0.0.1 that answers POSTs with the statuses of ``script`` in turn, then 200s."""

    def __init__(self, script=(), path_log=None):
        self.script, self.requests = list(script), []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append((self.path, body))
                status = outer.script.pop(0) if outer.script else 200
                payload = (ANSWER if status == 200 else json.dumps({"error": f"status {status}"})).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server_settings():
    servers = []

    def make(script):
        srv = Scripted(script)
        servers.append(srv)
        # the backend's own per-request retries off: what is under test is Dagster's retry of the step
        s = Settings(reader={"backend": "openai", "model": "m", "base_url": srv.url + "/v1", "retries": 0}, retries={"delay_s": 0.0})
        return srv, s

    yield make
    for srv in servers:
        srv.close()


def _ask_asset(s: Settings) -> dg.AssetsDefinition:
    """An asset that asks the configured reader server once, with the loop's retry policy."""

    @dg.asset(retry_policy=reader_retry_policy(s))
    def ask() -> dg.MaterializeResult:
        with no_retry_on_bad_requests():
            (gen,) = OpenAIBackend(BackendConfig.from_settings(s)).generate([Request(Prompt("sys", "user", [], {}))])
        return dg.MaterializeResult(metadata={"answer": gen.text})

    return ask


def _step_retries(inst: dg.DagsterInstance, run_id: str) -> int:
    return len(inst.all_logs(run_id, of_type=dg.DagsterEventType.STEP_UP_FOR_RETRY))


def test_a_reader_server_that_fails_twice_is_retried_by_dagster(server_settings):
    srv, s = server_settings([503, 503])
    policy = reader_retry_policy(s)
    assert (policy.max_retries, policy.backoff, policy.jitter) == (3, dg.Backoff.EXPONENTIAL, dg.Jitter.PLUS_MINUS)
    with pooled_instance() as inst:
        res = dg.materialize([_ask_asset(s)], instance=inst)
        assert res.success and _step_retries(inst, res.run_id) == 2
        mat = res.asset_materializations_for_node("ask")[0]
        assert mat.metadata["answer"].value == '{"ok": true}'
    assert len(srv.requests) == 3 and all(p == "/v1/chat/completions" for p, _ in srv.requests)


def test_a_client_error_is_not_retried(server_settings):
    srv, s = server_settings([400, 400, 400])
    with pooled_instance() as inst:
        res = dg.materialize([_ask_asset(s)], instance=inst, raise_on_error=False)
        assert not res.success and _step_retries(inst, res.run_id) == 0
    assert len(srv.requests) == 1


def test_the_loop_assets_carry_the_retry_policy_of_a_server_reader_only():
    def policies(s: Settings) -> set:
        return {a.op.retry_policy for a in build_definitions(s).assets if a.op.name.endswith("_loop")}

    assert policies(Settings()) == {None}  # the embedded reader has nothing to wait for
    (p,) = policies(Settings(reader={"backend": "openai", "model": "m"}, retries={"max_retries": 5, "delay_s": 2.0}))
    assert (p.max_retries, p.delay, p.backoff, p.jitter) == (5, 2.0, dg.Backoff.EXPONENTIAL, dg.Jitter.PLUS_MINUS)
    jobs = {j.name: j for j in build_definitions(Settings(lake_dir="s3://bucket/lake")).jobs}
    daily = jobs["finrag_daily"]
    assert daily.tags["dagster/max_retries"] == "1" and daily.tags["dagster/retry_on_asset_or_op_failure"] == "false"
    assert daily.op_retry_policy is not None  # an object-store lake: every step of the daily jobs


def test_a_failed_run_posts_one_short_redacted_message(server_settings, monkeypatch):
    from finrag_dagster.defs.alerts import build_failure_alert_sensor

    srv, _ = server_settings([])
    monkeypatch.setenv("OPENAI_API_KEY", "loc4l-Secret-Value-9f3c")
    s = Settings(alerts={"webhook_url": srv.url + "/hooks/T000/B000/XXXX", "ui_url": "http://dagster.example:3000/"})
    parts = dg.DailyPartitionsDefinition(start_date="2019-03-01")

    @dg.asset(partitions_def=parts)
    def prices():
        raise RuntimeError("the server said: key loc4l-Secret-Value-9f3c, Authorization: Bearer sk-abcdef123456 refused\n\nTraceback details")

    sensor = build_failure_alert_sensor(s)
    assert build_failure_alert_sensor(Settings()) is None  # off by default
    assert sensor.name in {x.name for x in build_definitions(s).sensors}
    with pooled_instance() as inst:
        res = dg.materialize([prices], instance=inst, partition_key="2019-03-06", raise_on_error=False)
        assert not res.success
        run = inst.get_run_by_id(res.run_id)
        failure = inst.all_logs(res.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)[0].dagster_event
        ctx = dg.build_run_status_sensor_context(sensor_name=sensor.name, dagster_instance=inst, dagster_run=run, dagster_event=failure)
        sensor(ctx.for_run_failure())
    ((path, body),) = srv.requests
    text = json.loads(body)["text"]
    assert path == "/hooks/T000/B000/XXXX"
    assert text.splitlines()[0] == f"finrag run failed: materialization {res.run_id}"
    assert "assets: prices" in text and "partition: 2019-03-06" in text
    assert text.splitlines()[-1] == f"http://dagster.example:3000/runs/{res.run_id}"
    assert "error: prices: RuntimeError: the server said" in text and "Traceback details" not in text
    assert "loc4l-Secret" not in text and "sk-abcdef" not in text and "[REDACTED]" in text


def test_the_reader_and_the_embedding_run_in_pools_the_shipped_instance_limits(tmp_path, monkeypatch):
    import shutil
    from pathlib import Path

    from dagster._core.instance.ref import InstanceRef

    def pools(s: Settings) -> dict[str, str | None]:
        return {
            a.op.name: a.op.pool
            for a in build_definitions(s).assets
            if a.op.name.endswith("_loop") or a.op.name in ("evidence", "lora_adapters", "sensitivity")
        }

    embedded, vllm = pools(Settings()), pools(Settings(reader={"backend": "vllm"}))
    assert embedded["evidence"] == vllm["evidence"] == "finrag_embedding" and embedded["lora_adapters"] == "finrag_reader"
    loops = [k for k in vllm if k.endswith("_loop")]
    assert loops and {vllm[k] for k in loops} == {"finrag_reader"}  # one GPU engine at a time
    assert {embedded[k] for k in loops} == {None}  # the embedded readers hold no engine: families run side by side
    assert vllm["sensitivity"] == "finrag_reader" and embedded["sensitivity"] is None  # Table 6 re-runs the reader
    shutil.copy(Path(__file__).resolve().parents[2] / ".dagster_home" / "dagster.yaml", tmp_path / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(tmp_path))) as inst:
        assert inst.global_op_concurrency_default_limit == 1
        assert inst.get_concurrency_config().pool_config.pool_granularity.value == "op"
        assert inst.run_retries_enabled and not inst.run_retries_retry_on_asset_or_op_failure


def test_a_sessions_decisions_are_due_after_its_ingest_with_the_allowance():
    import datetime as dt

    def policies(s: Settings) -> dict[str, object]:
        g = build_definitions(s).resolve_asset_graph()
        return {k.to_user_string(): g.get(k).freshness_policy for k in g.get_all_asset_keys() if g.get(k).freshness_policy is not None}

    s = Settings()
    due = policies(s)
    assert set(due) == {"stock_day_signals", "labels", *(f"{f}/reader_outputs" for f in s.variants.families)}
    p = due["stock_day_signals"]
    assert (p.deadline_cron, p.timezone, p.lower_bound_delta) == ("30 20 * * 1-5", "America/New_York", dt.timedelta(hours=4, minutes=30))
    later = policies(Settings(freshness={"allowance_min": 45}))["labels"]
    assert (later.deadline_cron, later.lower_bound_delta) == ("15 19 * * 1-5", dt.timedelta(hours=3, minutes=15))  # 18:30 + 45 min, after 16:00
    assert policies(Settings(freshness={"enabled": False})) == {}
