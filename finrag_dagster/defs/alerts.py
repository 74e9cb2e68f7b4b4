"""An alert on every failed run (docs/production.md): a run-failure sensor that posts one short
message (run id, assets, partition, the error's first paragraph, a link to the run in the UI) to
``[alerts] webhook_url`` as ``{"text": ...}``, which a Slack incoming webhook takes as it is.
Secrets are redacted with the reader's redaction (core/reader/redaction.py ``redact_secrets``): the
key patterns it knows, the values of the reader's API key and the object store's credentials, and
the webhook's own address."""

from __future__ import annotations

import json
import os
import urllib.request

import dagster as dg

from ..core.reader.redaction import redact_secrets
from ..core.settings import Settings
from .partitions import RANGE_END, RANGE_START

SECRET_ENVS = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")  # besides the reader's api_key_env
MAX_ASSETS = 5


def first_paragraph(text: str, limit: int = 600) -> str:
    """The error's first paragraph (up to the first blank line), cut at ``limit`` characters."""
    para = text.strip().split("\n\n", 1)[0].strip()
    return para if len(para) <= limit else para[: limit - 1] + "…"


def partition_of(tags: dict[str, str]) -> str:
    """The run's partition (``2019-03-06``), range (``2019-03-01...2019-03-06``) or ``-``."""
    if "dagster/partition" in tags:
        return tags["dagster/partition"]
    if RANGE_START in tags:
        return f"{tags[RANGE_START]}...{tags.get(RANGE_END, '')}"
    return "-"


def failure_message(run: dg.DagsterRun, error: str, ui_url: str, secrets: tuple[str, ...] = (), failed_steps: tuple[str, ...] = ()) -> str:
    """The alert's text for a failed run, secrets redacted. The assets are the run's selection, else
    its failed steps (a run of every asset of a job has no selection)."""
    keys = sorted(k.to_user_string() for k in (run.asset_selection or ())) or sorted(failed_steps)
    assets = ", ".join(keys[:MAX_ASSETS]) + (f" (+{len(keys) - MAX_ASSETS} more)" if len(keys) > MAX_ASSETS else "")
    job = "materialization" if run.job_name.startswith("__") else run.job_name  # Dagster's implicit asset job: no name to show
    lines = [
        f"finrag run failed: {job} {run.run_id}",
        f"assets: {assets or '-'}",
        f"partition: {partition_of(dict(run.tags))}",
        f"error: {first_paragraph(error)}",
        f"{ui_url.rstrip('/')}/runs/{run.run_id}",
    ]
    return redact_secrets("\n".join(lines), secrets)


def run_error(context: dg.RunFailureSensorContext) -> tuple[str, tuple[str, ...]]:
    """(the first failed step's error, its innermost cause: what the asset raised; the failed steps),
    else the run's own failure message."""
    events = context.get_step_failure_events()
    steps = tuple(e.step_key for e in events if e.step_key)
    for event in events:
        err = getattr(event.event_specific_data, "error", None)
        while err is not None and err.cause is not None:
            err = err.cause
        if err is not None:
            return f"{event.step_key}: {err.message}", steps
    return context.failure_event.message or "the run failed", steps


def post_text(url: str, text: str, timeout_s: float) -> int:
    """POST ``{"text": text}`` as JSON; the HTTP status."""
    req = urllib.request.Request(url, data=json.dumps({"text": text}).encode(), headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:  # noqa: S310 - a URL the operator configured
        return resp.status


def alert_secrets(s: Settings) -> tuple[str, ...]:
    """What must never reach the message: the reader's key, the object store's credentials, the webhook."""
    values = [os.environ.get(s.reader.api_key_env, ""), *(os.environ.get(e, "") for e in SECRET_ENVS), s.alerts.webhook_url]
    return tuple(v for v in values if v)


def build_failure_alert_sensor(s: Settings) -> dg.SensorDefinition | None:
    """The run-failure alert of these settings; None when ``alerts.webhook_url`` is empty (off)."""
    a = s.alerts
    if not a.webhook_url:
        return None

    @dg.run_failure_sensor(
        name="run_failure_alert",
        description="Posts a short message on every failed run to [alerts] webhook_url (docs/production.md).",
        default_status=dg.DefaultSensorStatus.RUNNING,
        monitor_all_code_locations=False,
        minimum_interval_seconds=a.interval_s,
    )
    def run_failure_alert(context: dg.RunFailureSensorContext):
        error, steps = run_error(context)
        text = failure_message(context.dagster_run, error, a.ui_url, alert_secrets(s), steps)
        status = post_text(a.webhook_url, text, a.timeout_s)
        context.log.info(f"alert for run {context.dagster_run.run_id} posted (HTTP {status})")

    return run_failure_alert
