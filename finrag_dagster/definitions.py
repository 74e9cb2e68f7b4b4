"""The one ``Definitions`` object (workspace.yaml and ``dagster dev -m`` point here)."""

from __future__ import annotations

import dagster as dg

from .core.settings import Settings, load_settings
from .defs.assets.evidence import build_anchors_asset, build_cards_asset, build_evidence_asset
from .defs.assets.ingest import RAW_DESCRIPTIONS, build_raw_asset, build_universe_asset, build_world_asset
from .defs.assets.evaluation import build_evaluation_assets
from .defs.assets.experience import build_experience_task_asset, build_experience_tree_asset
from .defs.assets.labels import build_labels_asset
from .defs.assets.retrieval import build_candidates_asset
from .defs.assets.variants import build_variant_assets
from .core.loop import family_assets
from .defs.assets.sql import build_sql_asset, sql_models
from .defs.partitions import trading_day_partitions
from .defs.resources import FinragResource
from .defs.sensors import build_daily_schedule, build_matured_feedback_sensor, build_new_market_data_sensor


NOT_DAILY = ("synthetic_world", "universe", "table1_audit", "evaluation", "sensitivity", "experience_task", "report")


def build_definitions(settings: Settings | None = None, resource: FinragResource | None = None) -> dg.Definitions:
    s = settings or load_settings()
    days = trading_day_partitions(s.calendar.start, s.calendar.end)
    assets: list = []
    if s.sources.kind == "synthetic":
        assets.append(build_world_asset(days, s))
        assets.append(build_universe_asset(["synthetic_world"]))
    else:
        assets.append(build_universe_asset([]))
    assets += [build_raw_asset(t, days, d) for t, d in RAW_DESCRIPTIONS.items()]
    assets += [build_evidence_asset(days), build_anchors_asset(days), build_cards_asset(days)]
    assets += [build_candidates_asset(days), build_labels_asset(days)]
    assets.append(build_experience_tree_asset(days))
    for family in s.variants.families:
        assets += build_variant_assets(family, days, s)
    table_assets = {
        t: [dg.AssetKey([f, t]) for f in s.variants.families]
        for t in ("contexts", "reader_outputs", "feedback")
    }
    table_assets["memory_snapshot"] = [dg.AssetKey([f, "memory_snapshot"]) for f in s.variants.families if "memory_snapshot" in family_assets(f)]
    assets += [build_sql_asset(m, days, table_assets) for m in sql_models()]
    assets += build_evaluation_assets(s)
    assets.append(build_experience_task_asset())
    present = {k.to_user_string() for a in assets for k in a.keys}
    daily = dg.define_asset_job(
        "finrag_daily",
        selection=dg.AssetSelection.all() - dg.AssetSelection.assets(*[k for k in NOT_DAILY if k in present]),
        partitions_def=days,
        description="The whole daily chain for one trading day (or a range, as one run).",
    )
    return dg.Definitions(
        assets=assets,
        jobs=[daily],
        schedules=[build_daily_schedule(daily)],
        sensors=[build_matured_feedback_sensor(tuple(s.variants.families)), build_new_market_data_sensor(daily)],
        resources={"finrag": resource or FinragResource()},
    )


defs = build_definitions()
