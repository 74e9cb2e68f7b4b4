"""Retries the Dagster way (docs/production.md): step retry policies and run retries.

What Dagster does: a step that fails on something that may pass (a reader server restarting, an
object store timing out) is retried with exponential backoff and jitter (:func:`step_retry_policy`),
and a daily job's run whose process died is re-executed by the daemon (:func:`run_retry_tags`, with
``run_retries`` on in the instance's dagster.yaml). What stays in finrag's code is what Dagster
cannot do inside one step: the openai reader retries one request of a concurrent batch, honouring
the server's ``Retry-After`` (core/reader/backends/openai.py), and a retried loop step re-sends only the
prompts that got no answer (the answered ones are in the reader cache). A bad input (a
:class:`~finrag_dagster.core.errors.StepError`, a source file that cannot be read) or a client
error (a 4xx on every request) fails at once: :func:`no_retry_on_bad_requests`.
"""

from __future__ import annotations

from contextlib import contextmanager

import dagster as dg

from ..core.reader.backends import BackendRejected
from ..core.settings import Settings

SERVER_BACKENDS = ("openai", "vllm")  # readers that talk to a server or a GPU engine that can fail transiently


def step_retry_policy(s: Settings) -> dg.RetryPolicy | None:
    """Exponential backoff from ``retries.delay_s`` with jitter, ``retries.max_retries`` times (None: off)."""
    r = s.retries
    if not r.max_retries:
        return None
    return dg.RetryPolicy(max_retries=r.max_retries, delay=r.delay_s, backoff=dg.Backoff.EXPONENTIAL, jitter=dg.Jitter.PLUS_MINUS)


def reader_retry_policy(s: Settings) -> dg.RetryPolicy | None:
    """The loop's policy: on for a server reader (openai, vllm) or an object-store lake, else None."""
    return step_retry_policy(s) if s.reader.backend in SERVER_BACKENDS or s.lake_uri else None


def job_retry_policy(s: Settings) -> dg.RetryPolicy | None:
    """The daily jobs' policy for every step: on when the lake is an object store."""
    return step_retry_policy(s) if s.lake_uri else None


def run_retry_tags(s: Settings) -> dict[str, str]:
    """Tags of the daily jobs: re-execute a run whose process died, not one whose step failed (the
    step policy has had its go at that)."""
    if not s.retries.run_max_retries:
        return {}
    return {"dagster/max_retries": str(s.retries.run_max_retries), "dagster/retry_on_asset_or_op_failure": "false"}


@contextmanager
def no_retry_on_bad_requests():
    """A server that refused every request with a client error fails the step without retries."""
    try:
        yield
    except BackendRejected as e:
        raise dg.Failure(str(e), allow_retries=False) from None
