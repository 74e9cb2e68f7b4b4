"""The one ``Definitions`` object (workspace.yaml and ``dagster dev -m`` point here)."""

from __future__ import annotations

import dagster as dg

from .core.settings import Settings, load_settings
from .core.storage.sqlmodels import load_models
from .defs.assets.evaluation import build_evaluation_assets
from .defs.assets.evidence import build_anchors_asset, build_cards_asset, build_evidence_asset
from .defs.assets.experience import build_experience_task_asset, build_experience_tree_asset
from .defs.assets.ingest import RAW_DESCRIPTIONS, build_raw_asset, build_universe_asset, build_world_asset
from .defs.assets.labels import build_labels_asset
from .defs.assets.lora import build_lora_asset
from .defs.assets.retrieval import build_candidates_asset
from .defs.assets.sql import build_sql_asset
from .defs.assets.variants import build_variant_assets, family_assets
from .defs.partitions import trading_day_partitions
from .defs.resources import FinragResource
from .defs.sensors import build_daily_schedule, build_decisions_after_ingest_sensor, build_matured_feedback_sensor, build_new_market_data_sensor


def build_definitions(settings: Settings | None = None, resource: FinragResource | None = None) -> dg.Definitions:
    s = settings or load_settings()
    # history (look-back) assets from the first price day; decision-day assets from the first
    # decision day, so their partitions are exactly the days a decision can be made on
    days = trading_day_partitions(s.calendar.start, s.calendar.end)
    dec = trading_day_partitions(max(s.calendar.decision_start, s.calendar.start), s.calendar.end)
    assets: list = []
    if s.sources.kind == "synthetic":
        assets.append(build_world_asset(days, s))
        assets.append(build_universe_asset(["synthetic_world"]))
    else:
        assets.append(build_universe_asset([]))
    assets += [build_raw_asset(t, days, d) for t, d in RAW_DESCRIPTIONS.items()]
    assets += [build_evidence_asset(days), build_anchors_asset(dec), build_cards_asset(dec)]
    assets += [build_candidates_asset(dec), build_labels_asset(dec)]
    assets.append(build_experience_tree_asset(dec))
    for family in s.variants.families:
        assets += build_variant_assets(family, dec, s)
    table_assets = {t: [dg.AssetKey([f, t]) for f in s.variants.families] for t in ("contexts", "reader_outputs", "feedback")}
    table_assets["memory_snapshot"] = [dg.AssetKey([f, "memory_snapshot"]) for f in s.variants.families if "memory_snapshot" in family_assets(f)]
    assets += [build_sql_asset(m, dec if m.spec.decision_time else days, table_assets) for m in load_models()]
    assets += build_evaluation_assets(s)
    assets.append(build_experience_task_asset())
    assets.append(build_lora_asset())  # group lora, unpartitioned: in neither job, materialised on demand
    history_keys = [k for a in assets if a.partitions_def is days for k in a.keys]
    decision_keys = [k for a in assets if a.partitions_def is dec for k in a.keys]
    # One run covers one partitions definition, so the day's chain is two runs: the ingest of the
    # day's sources (history partitions), then its decisions (decision-day partitions), chained by
    # the run-status sensor `decisions_after_ingest`. A backfill from the UI spans both at once.
    ingest = dg.define_asset_job(
        "finrag_ingest",
        selection=dg.AssetSelection.assets(*history_keys),
        partitions_def=days,
        description="The day's sources: prices, news, filings, returns and evidence (one trading day or a range, as one run).",
    )
    daily = dg.define_asset_job(
        "finrag_daily",
        selection=dg.AssetSelection.assets(*decision_keys),
        partitions_def=dec,
        description="The day's decisions: anchors, cards, pools, labels, the variant loops and stock-day signals (one decision day or a range, as one run).",
    )
    return dg.Definitions(
        assets=assets,
        jobs=[ingest, daily],
        executor=dg.in_process_executor if s.execution.job_executor == "in_process" else None,  # None: Dagster's default (multiprocess)
        schedules=[build_daily_schedule(ingest)],
        sensors=[
            build_matured_feedback_sensor(tuple(s.variants.families), interval_s=s.sensors.matured_feedback_interval_s),
            build_new_market_data_sensor(ingest, interval_s=s.sensors.new_market_data_interval_s),
            build_decisions_after_ingest_sensor(ingest, daily, interval_s=s.sensors.decisions_after_ingest_interval_s),
        ],
        resources={"finrag": resource or FinragResource()},
    )


defs = build_definitions()
