"""Run the pipeline in one process (what `finrag demo` and the tests use).

Materialisation goes through Dagster (``dagster.materialize``) against a real instance, so the
runs, materialisations and checks are visible in `dagster dev` afterwards. Each stage is one
single-run backfill over a range of trading days, as the assets are written to process ranges.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass

import dagster as dg

from .core.calendar import nyse
from .core.loop import LORA_FAMILIES
from .core.settings import Settings
from .definitions import build_definitions
from .defs.assets.variants import family_assets
from .defs.partitions import RANGE_END, RANGE_START
from .defs.resources import FinragResource

# Stages in dependency order: (name, assets, which range they cover)
HISTORY = "history"  # from the first price day: look-back for returns, dedup, candidate pools
DECISIONS = "decisions"  # from the first decision day


@dataclass(frozen=True)
class Stage:
    name: str
    assets: tuple[str, ...]
    span: str | None  # None = unpartitioned


def stages(settings: Settings) -> list[Stage]:
    first = ("synthetic_world", "universe") if settings.sources.kind == "synthetic" else ("universe",)
    # the LoRA families read with adapters trained on the train split: only when a setting turns them on
    lora = [Stage("lora", ("lora_adapters",), None)] if set(settings.variants.families) & set(LORA_FAMILIES) else []
    return [
        Stage("sources", first, None),
        Stage("history", ("prices", "news_raw", "filings_raw", "returns", "evidence"), HISTORY),
        Stage("decisions", ("anchors", "context_cards", "candidates", "labels", "experience_tree"), DECISIONS),
        Stage("selection", ("sensitivity",), None),  # Table 6 on validation: the test split runs with its choice
        *lora,
        Stage("loop", tuple(f"{f}/{t}" for f in settings.variants.families for t in family_assets(f)) + ("stock_day_signals",), DECISIONS),
        Stage("evaluation", ("table1_audit", "evaluation", "experience_task", "report"), None),
    ]


PID_TAG = "finrag/pid"
HOST_TAG = "finrag/host"


def process_tags() -> dict[str, str]:
    """Which process runs an in-process materialisation (so a later run can tell it died)."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fail_orphaned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark FAILED the in-process runs left STARTED by a `finrag` process that no longer exists
    on this host (killed mid-way). Runs launched from the UI are watched by Dagster's run
    monitoring instead (on in the shipped dagster.yaml). Returns the run ids marked."""
    host = socket.gethostname()
    marked = []
    for run in instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING])):
        pid, h = run.tags.get(PID_TAG), run.tags.get(HOST_TAG)
        if pid is None or h != host or _alive(int(pid)):
            continue
        instance.report_run_failed(run, f"the finrag process (pid {pid}) that ran this ended without finishing it (killed?)")
        marked.append(run.run_id)
    return marked


def run_range(
    settings: Settings,
    end: dt.date | None = None,
    decision_start: dt.date | None = None,
    instance: dg.DagsterInstance | None = None,
    world_config: dict | None = None,
    resource: FinragResource | None = None,
    only: Sequence[str] | None = None,
    on_stage=None,
    log_level: str = "WARNING",
    history_start: dt.date | None = None,
) -> list[dg.ExecuteInProcessResult]:
    """Materialise every stage over [calendar.start | decision_start, end] in one process
    (``history_start``: the history stage from that day instead, when the days before are in the lake)."""
    cal = nyse()
    end = end or settings.calendar.end
    decision_start = decision_start or settings.calendar.decision_start
    if decision_start < settings.calendar.decision_start:
        # decision-day assets are partitioned from calendar.decision_start: move it back so the
        # requested days are partitions (the settings handed to the assets say the same)
        settings = settings.with_overrides(calendar={"decision_start": decision_start})
    hist_days = cal.sessions_in_range(history_start or settings.calendar.start, end)
    dec_days = cal.sessions_in_range(decision_start, end)
    resource = resource or FinragResource.from_settings(settings)
    defs = build_definitions(settings, resource)
    all_assets = list(defs.assets)
    instance = instance or dg.DagsterInstance.ephemeral()
    results = []
    for st in stages(settings):
        names = [a for a in st.assets if (only is None or a in only)]
        if not names:
            continue
        tags = {}
        if st.span is not None:
            days = hist_days if st.span == HISTORY else dec_days
            if not days:
                continue
            tags = {RANGE_START: days[0].isoformat(), RANGE_END: days[-1].isoformat()}
        tags.update(process_tags())
        run_config: dict = {"loggers": {"console": {"config": {"log_level": log_level}}}}
        if "synthetic_world" in names and world_config:
            run_config["ops"] = {"synthetic_world": {"config": world_config}}
        if on_stage:
            on_stage(st, names)
        res = dg.materialize(
            all_assets,
            selection=[dg.AssetKey.from_user_string(n) for n in names],
            instance=instance,
            tags=tags,
            run_config=run_config,
            resources={"finrag": resource},
            raise_on_error=True,
        )
        results.append(res)
    return results
