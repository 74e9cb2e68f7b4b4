"""The one ``Definitions`` object (workspace.yaml and ``dagster dev -m`` point here)."""

from __future__ import annotations

import dagster as dg

from .core.settings import Settings, load_settings
from .defs.assets.evidence import build_anchors_asset, build_cards_asset, build_evidence_asset
from .defs.assets.ingest import RAW_DESCRIPTIONS, build_raw_asset, build_universe_asset, build_world_asset
from .defs.assets.sql import build_sql_asset, sql_models
from .defs.partitions import trading_day_partitions
from .defs.resources import FinragResource


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
    assets += [build_sql_asset(m, days) for m in sql_models()]
    daily = dg.define_asset_job(
        "finrag_daily",
        selection=dg.AssetSelection.all() - dg.AssetSelection.assets("synthetic_world", "universe"),
        partitions_def=days,
        description="The whole daily chain for one trading day (or a range, as one run).",
    )
    return dg.Definitions(
        assets=assets,
        jobs=[daily],
        resources={"finrag": resource or FinragResource()},
    )


defs = build_definitions()
