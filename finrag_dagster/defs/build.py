"""Build the one ``Definitions`` object from settings (finrag_dagster/definitions.py holds the instance
`dagster dev` loads; ``finrag demo`` and every step process build their own from the run's settings)."""

from __future__ import annotations

import dagster as dg

from ..core.settings import Settings, load_settings
from .alerts import build_failure_alert_sensor
from .executor import read_step_events_promptly
from .freshness import DUE, build_on_time
from .resources import FinragResource
from .retries import job_retry_policy, run_retry_tags
from .sensors import build_daily_schedule, build_decisions_after_ingest_sensor, build_matured_feedback_sensor, build_new_market_data_sensor
from .stages import DECISIONS, HISTORY, keys_of, parts_of, staged_assets


def build_definitions(settings: Settings | None = None, resource: FinragResource | None = None) -> dg.Definitions:
    s = settings or load_settings()
    read_step_events_promptly()  # runs of these definitions (UI, daemon, finrag demo) read step events promptly
    # every stage's assets (defs/stages.py): history (look-back) assets partitioned from the first
    # price day, decision-day assets from the first decision day, the rest unpartitioned
    p = parts_of(s)
    staged = staged_assets(s, p)
    assets = [a for _, built in staged for a in built]
    history_keys, decision_keys = keys_of(staged, HISTORY), keys_of(staged, DECISIONS)
    # each session's due decisions, checked per partition (defs/freshness.py): by the sensor's own
    # job, not inside each day's run
    firsts = {k: a.partitions_def.start.date().isoformat() for a in assets if a.partitions_def is not None for k in a.keys if k.path[-1] in DUE}
    on_time = build_on_time(firsts, s) if s.freshness.enabled and firsts else None
    on_time_keys = dg.AssetSelection.checks(*on_time.checks.check_keys) if on_time else None
    # One run covers one partitions definition, so the day's chain is two runs: the ingest of the
    # day's sources (history partitions), then its decisions (decision-day partitions), chained by
    # the run-status sensor `decisions_after_ingest`. A backfill from the UI spans both at once.
    ingest = dg.define_asset_job(
        "finrag_ingest",
        selection=dg.AssetSelection.assets(*history_keys),
        description="The day's sources: prices, news, filings, returns and evidence (one trading day or a range, as one run).",
        tags=run_retry_tags(s),  # a run whose process died is re-executed (docs/production.md)
        op_retry_policy=job_retry_policy(s),
    )
    daily = dg.define_asset_job(
        "finrag_daily",
        selection=dg.AssetSelection.assets(*decision_keys) - on_time_keys if on_time_keys else dg.AssetSelection.assets(*decision_keys),
        description="The day's decisions: anchors, cards, pools, labels, the variant loops and stock-day signals (one decision day or a range, as one run).",
        tags=run_retry_tags(s),
        op_retry_policy=job_retry_policy(s),
    )
    return dg.Definitions(
        assets=assets,
        asset_checks=[on_time.checks] if on_time else [],
        jobs=[ingest, daily, *([on_time.job] if on_time else [])],
        executor=dg.in_process_executor if s.execution.job_executor == "in_process" else None,  # None: Dagster's default (multiprocess)
        schedules=[build_daily_schedule(ingest)],
        sensors=[
            build_matured_feedback_sensor(tuple(s.variants.families), interval_s=s.sensors.matured_feedback_interval_s),
            build_new_market_data_sensor(ingest, interval_s=s.sensors.new_market_data_interval_s),
            build_decisions_after_ingest_sensor(ingest, daily, interval_s=s.sensors.decisions_after_ingest_interval_s),
            *([alert] if (alert := build_failure_alert_sensor(s)) is not None else []),  # [alerts] webhook_url
            *([on_time.sensor] if on_time else []),
        ],
        resources={"finrag": resource or FinragResource()},
    )
