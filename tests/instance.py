"""Dagster instances for tests: the shipped instance's event log storage in a temporary folder.

``dagster.instance_for_test()`` records events in Dagster's default per-run SQLite files, about
20 ms per event here; a pipeline test writes thousands of them (one materialisation per asset and
partition). The shipped instance (.dagster_home/dagster.yaml) uses finrag's pooled consolidated
SQLite storage instead (finrag_dagster/defs/event_log.py, ~2 ms per event): tests use that too, so
they exercise the storage users run, at its speed."""

from __future__ import annotations

import tempfile
from contextlib import contextmanager

import dagster as dg


@contextmanager
def pooled_instance(**overrides):
    """``dagster.instance_for_test`` with the shipped (pooled SQLite) event log storage."""
    with tempfile.TemporaryDirectory() as d:
        storage = {"module": "finrag_dagster.defs.event_log", "class": "PooledSqliteEventLogStorage", "config": {"base_dir": d}}
        with dg.instance_for_test(temp_dir=d, overrides={"event_log_storage": storage, **overrides}) as inst:
            yield inst


def instance_yaml(home) -> str:
    """A dagster.yaml for a test's DAGSTER_HOME (webserver, daemon, runs): the shipped instance's
    event log storage, run monitoring on, Dagster's own DEBUG lines off the terminal, telemetry off,
    the shipped concurrency pools (one step at a time per pool)."""
    return (
        "event_log_storage:\n  module: finrag_dagster.defs.event_log\n  class: PooledSqliteEventLogStorage\n"
        f"  config:\n    base_dir: {home}\n"
        "run_monitoring:\n  enabled: true\npython_logs:\n  python_log_level: INFO\ntelemetry:\n  enabled: false\nnux:\n  enabled: false\n"
        "concurrency:\n  pools:\n    default_limit: 1\n    granularity: op\n"  # the shipped pools (docs/production.md)
    )
