"""The pipeline's stages, declared once, in the order they run.

Each stage says which assets it builds (the asset factories of ``defs/assets``, and the SQL models
whose ``-- stage:`` header names it), which range of trading days a run of it covers (``history``:
from calendar.start, for look-back; ``decisions``: from calendar.decision_start; ``None``:
unpartitioned) and whether its steps are independent (the loop's families: a process each under
``execution.processes``). :func:`staged_assets` is what ``build_definitions`` puts in the
``Definitions``, what ``pipeline.run_range`` (``finrag demo``) runs stage by stage, and what the CLI
reports; adding a stage is one entry in :data:`STAGES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import dagster as dg

from ..core.families import LORA_FAMILIES
from ..core.settings import Settings
from ..core.storage.sqlmodels import load_models
from .assets.evaluation import build_evaluation_assets
from .assets.evidence import build_anchors_asset, build_cards_asset, build_evidence_asset
from .assets.experience import build_experience_task_asset, build_experience_tree_asset
from .assets.ingest import RAW_DESCRIPTIONS, build_raw_asset, build_universe_asset, build_world_asset
from .assets.labels import build_labels_asset
from .assets.lora import build_lora_asset
from .assets.retrieval import build_candidates_asset
from .assets.sql import build_sql_asset
from .assets.variants import build_variant_assets, family_assets
from .catalog import with_catalog
from .partitions import trading_day_partitions

HISTORY = "history"  # from the first price day: look-back for returns, dedup, candidate pools
DECISIONS = "decisions"  # from the first decision day


@dataclass(frozen=True)
class Parts:
    """What the asset factories share: the two partition sets and which assets write each per-family table."""

    days: dg.PartitionsDefinition  # history: calendar.start .. calendar.end
    dec: dg.PartitionsDefinition  # decisions: calendar.decision_start .. calendar.end
    table_assets: dict[str, list[dg.AssetKey]]


@dataclass(frozen=True)
class Stage:
    name: str
    span: str | None  # HISTORY, DECISIONS or None (unpartitioned)
    build: Callable[[Settings, Parts], list[dg.AssetsDefinition]]
    parallel: bool = False  # long steps that do not depend on each other: worth a process each
    runs: Callable[[Settings], bool] = lambda s: True  # whether `finrag demo` runs it (its assets are always defined)


def _sql(stage: str, s: Settings, p: Parts) -> list[dg.AssetsDefinition]:
    """The SQL models whose header names ``stage``."""
    return [build_sql_asset(m, p.dec if m.spec.decision_time else p.days, p.table_assets) for m in load_models() if m.stage == stage]


def _sources(s: Settings, p: Parts) -> list[dg.AssetsDefinition]:
    if s.sources.kind == "synthetic":
        return [build_world_asset(p.days, s), build_universe_asset(["synthetic_world"])]
    return [build_universe_asset([])]


def _history(s: Settings, p: Parts) -> list[dg.AssetsDefinition]:
    return [*(build_raw_asset(t, p.days, d) for t, d in RAW_DESCRIPTIONS.items()), *_sql(HISTORY, s, p), build_evidence_asset(p.days)]


def _decisions(s: Settings, p: Parts) -> list[dg.AssetsDefinition]:
    dec = p.dec
    return [build_anchors_asset(dec), build_cards_asset(dec), build_candidates_asset(dec), build_labels_asset(dec), build_experience_tree_asset(dec)]


def _evaluation_asset(s: Settings, name: str) -> dg.AssetsDefinition:
    return next(a for a in build_evaluation_assets(s) if a.key == dg.AssetKey(name))


def _loop(s: Settings, p: Parts) -> list[dg.AssetsDefinition]:
    return [a for f in s.variants.families for a in build_variant_assets(f, p.dec, s)] + _sql("loop", s, p)


def _evaluation(s: Settings, p: Parts) -> list[dg.AssetsDefinition]:
    return [*_sql("evaluation", s, p), _evaluation_asset(s, "evaluation"), build_experience_task_asset(), _evaluation_asset(s, "report")]


STAGES: tuple[Stage, ...] = (
    Stage("sources", None, _sources),
    Stage(HISTORY, HISTORY, _history),
    Stage("decisions", DECISIONS, _decisions),
    Stage("selection", None, lambda s, p: [_evaluation_asset(s, "sensitivity")]),  # Table 6 on validation: the test split runs with its choice
    # the LoRA families read with adapters trained on the train split: run only when a family asks for them
    Stage("lora", None, lambda s, p: [build_lora_asset(s)], runs=lambda s: bool(set(s.variants.families) & set(LORA_FAMILIES))),
    Stage("loop", DECISIONS, _loop, parallel=True),
    Stage("evaluation", None, _evaluation),
)


def parts_of(s: Settings) -> Parts:
    """The partition sets of these settings (history from calendar.start, decisions from decision_start)."""
    days = trading_day_partitions(s.calendar.start, s.calendar.end)
    dec = trading_day_partitions(max(s.calendar.decision_start, s.calendar.start), s.calendar.end)
    fams = s.variants.families
    table_assets = {t: [dg.AssetKey([f, t]) for f in fams] for t in ("contexts", "reader_outputs", "feedback")}
    table_assets["memory_snapshot"] = [dg.AssetKey([f, "memory_snapshot"]) for f in fams if "memory_snapshot" in family_assets(f)]
    return Parts(days, dec, table_assets)


def staged_assets(s: Settings, p: Parts | None = None) -> list[tuple[Stage, list[dg.AssetsDefinition]]]:
    """Every stage with the assets it builds for these settings, in order."""
    p = p or parts_of(s)
    models = {m.name: m for m in load_models()}
    # every asset with its catalog entry: columns, storage, owners, code version (defs/catalog.py)
    return [(st, [with_catalog(a, s, models) for a in st.build(s, p)]) for st in STAGES]


def keys_of(staged: list[tuple[Stage, list[dg.AssetsDefinition]]], span: str) -> list[dg.AssetKey]:
    """The asset keys of the stages covering ``span`` (HISTORY or DECISIONS): what one job runs."""
    return [k for st, built in staged if st.span == span for a in built for k in a.keys]


def asset_names(assets: list[dg.AssetsDefinition]) -> tuple[str, ...]:
    """The user-facing keys ("prices", "source_memory/contexts") of a stage's assets."""
    return tuple(k.to_user_string() for a in assets for k in a.keys)
