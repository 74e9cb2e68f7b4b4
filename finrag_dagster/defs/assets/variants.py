"""The memory variants as first-class Dagster assets: one asset group per variant family.

An asset factory: each family gets ``<family>/memory_snapshot``, ``<family>/contexts``,
``<family>/reader_outputs`` (one multi-asset, stepped day by day together) and ``<family>/feedback``;
all share anchors, candidates and labels and write under ``variant=<name>`` in the shared tables
(a shuffled family's seeds as ``<family>_s0..s4``). Why not a variant partition dimension or a
column: docs/feedback_loop.md, "Variants as a first-class Dagster dimension". The assets only adapt:
the day-by-day step is core/loop.py, its inputs from the lake and a family's writes core/loop_io.py.
"""

import dagster as dg
import numpy as np
import polars as pl

from ...core import families
from ...core.engine import EngineSpec, use_engine
from ...core.experience.tree import ToEParams, from_table, render_markdown
from ...core.loop import LORA_FAMILIES, Variant, variants_of
from ...core.loop_io import FamilyIncomplete, FamilyRun, family_feedback, run_family
from ...core.lora_train import lora_backends
from ...core.memory.source_memory import MemoryParams
from ...core.progress import Progress
from ...core.reader.backends import BackendConfig, make_backend
from ...core.reader.distributed import distributed_backend
from ...core.reader.run import DayStats
from ...core.settings import Settings
from ..context import days_of, step_errors_as_failures
from ..pools import reader_pool
from ..reader_checks import reader_check_results, reader_check_specs
from ..reporting import preview_md, report_partition_rows
from ..resources import FinragResource
from ..retries import no_retry_on_bad_requests, reader_retry_policy


class ReaderConfig(dg.Config):
    """Which reader answers (defaults from settings.reader); memory strength (settings.memory)."""

    backend: str = ""
    model: str = ""
    base_url: str = ""
    lam: float = -1.0
    delta: float = -1.0
    kappa: float = -1.0

    def backend_config(self, s: Settings) -> BackendConfig:
        return BackendConfig.from_settings(s, backend=self.backend, model=self.model, base_url=self.base_url)

    def memory_params(self, s: Settings) -> MemoryParams:
        return MemoryParams.from_settings(s, kappa=self.kappa, delta=self.delta, lam=self.lam)

    @property
    def memory_overridden(self) -> bool:
        """λ or δ given as run config: it wins over Table 6's selection on the test split."""
        return self.lam >= 0 or self.delta >= 0


def family_assets(family: str) -> tuple[str, ...]:
    """The asset names under ``<family>/`` (the loop multi-asset's outputs, then feedback)."""
    return families.assets_of(family)


def reader_metadata(st: DayStats) -> dict:
    mix = {h: {f"{k:+d}": round(v / max(1, sum(c.values())), 3) for k, v in c.items()} for h, c in st.label_mix.items()}
    return {
        "anchors": st.anchors,
        "valid_json_rate": round(st.valid_json / st.anchors, 4) if st.anchors else 0.0,
        "valid_citation_rate": round(st.horizons_with_valid_citation / st.horizons, 4) if st.horizons else 0.0,
        "cache_hits": st.cache_hits,
        "cache_misses": st.cache_misses,
        "label_mix": dg.MetadataValue.json(mix),
        "prompt_tokens_per_anchor": round(st.prompt_tokens / st.anchors, 1) if st.anchors else 0.0,
        "output_tokens_per_anchor": round(st.output_tokens / st.anchors, 1) if st.anchors else 0.0,
        "latency_ms_per_anchor_uncached": round(st.latency_ms / max(1, st.cache_misses), 2),
        "backend_errors": len(st.errors),
        "requests": st.requests,
        "retries": st.retries,
        "failures": st.failures,
        "anchors_completed": st.anchors_completed,
    }


def _key(family: str, name: str) -> dg.AssetKey:
    """The asset key ``<family>/<name>``."""
    return dg.AssetKey([family, name])


def _window(start: int, end: int) -> dg.TimeWindowPartitionMapping:
    """A day-offset partition mapping that tolerates missing upstream days (the first day's previous state)."""
    return dg.TimeWindowPartitionMapping(start_offset=start, end_offset=end, allow_nonexistent_upstream_partitions=True)


def _loop_specs(family: str, uses_memory: bool, uses_toe: bool) -> list[dg.AssetSpec]:
    """The outputs of a family's loop multi-asset, each with what it reads (see the comment inside)."""
    # Dependencies per output. Every output of the family reads the same inputs of day D (pools,
    # anchors, cards, evidence; the prior tree for a toe family), and each state (memory, tree)
    # also carries its own previous partition forward: no cycle between assets besides those
    # self-dependencies. Contexts of D use D's memory and tree, and the states use the labels
    # matured by D-1 (decision days D-6 .. D-2) and this family's outputs of those days; these are
    # computed inside this multi-asset, stepped day by day, and not declared between its outputs:
    # a dependency of the states on the outputs would be a cycle, a lagged labels mapping would make
    # a backfill of days a..b also target the states of b+1 .. b+6 (Dagster follows a mapping
    # downstream), and outputs of one multi-asset must reach a backfill's target the same way or
    # the UI refuses to launch it. The descriptions say what each output reads.
    common = ["candidates", "anchors", "context_cards", "evidence", *(["experience_tree"] if uses_toe else [])]
    specs = []
    if uses_memory:
        specs.append(
            dg.AssetSpec(
                _key(family, "memory_snapshot"),
                kinds={"parquet"},
                deps=[*common, dg.AssetDep(_key(family, "memory_snapshot"), partition_mapping=_window(-1, -1))],
                description="Source-memory cells used on D: the state of D-1 updated with the feedback whose labels matured by D-1 "
                "(decision days D-6 .. D-2, read from `labels` and this family's reader outputs); reset at each split start.",
            )
        )
    if uses_toe:
        specs.append(
            dg.AssetSpec(
                _key(family, "experience_tree"),
                kinds={"parquet"},
                deps=[*common, dg.AssetDep(_key(family, "experience_tree"), partition_mapping=_window(-1, -1))],
                description="This family's Tree-of-Experience per decision day (experience_tree, tree_id = variant): the prior tree at "
                "each split start, then eq. 13 updates from the labels matured by D-1 (read from `labels`) and D's selections/expansions; "
                "the day's state in experience_tree, the content of new or changed positions (principle, embedding) once in "
                "experience_leaves dated D; with principle_selections (the path each anchor used) and principle_updates (every eq. 13 update).",
            )
        )
    specs.append(
        dg.AssetSpec(
            _key(family, "contexts"),
            kinds={"parquet"},
            deps=common,
            description="Top-M context per anchor by r + lambda * mean_h adj, with D's memory snapshot (and principle, for a toe family).",
        )
    )
    specs.append(
        dg.AssetSpec(
            _key(family, "reader_outputs"),
            kinds={"parquet"},
            deps=common,
            description="Reader signals per anchor and horizon with cited IDs, read from D's contexts and market cards.",
        )
    )
    return specs


def _run_loop(context: dg.AssetExecutionContext, config: ReaderConfig, finrag: FinragResource, family: str, vs: list[Variant]):
    """Step the family's variants over the run's days; returns (settings, memory params, backend, run).

    A family that cannot finish its days is a ``dg.Failure`` carrying the reader's statistics."""
    at = finrag.day_run(days_of(context))
    s, cal, days = at.settings, at.cal, at.days
    params = config.memory_params(s)
    bcfg = config.backend_config(s)
    prog = Progress(len(days) * len(vs), f"{family} loop", log=context.log.info, every=20, unit="variant-days")
    try:
        with step_errors_as_failures(), no_retry_on_bad_requests(), use_engine(EngineSpec.from_settings(s)):
            # the LoRA families read with their own adapters' backends (lora_backends), in this process
            backend = make_backend(bcfg) if family in LORA_FAMILIES else distributed_backend(bcfg)
            backend_for = lora_backends(s, s.lake_dir, cal, bcfg) if family in LORA_FAMILIES else None
            run = run_family(
                at,
                variants=vs,
                params=params,
                backend=backend,
                decoding=bcfg.decoding(),
                params_overridden=config.memory_overridden,
                on_day=lambda _d: prog.update(),
                backend_for=backend_for,
            )
    except FamilyIncomplete as e:
        failed = dict(list(e.error.stats.failed_anchors.items())[:20])
        raise dg.Failure(
            description=str(e), metadata={"backend": backend.name, **reader_metadata(e.error.stats), "failed_anchors": dg.MetadataValue.json(failed)}
        ) from None
    prog.close()
    return s, params, backend, run


def _memory_result(family: str, names: list[str], run: FamilyRun) -> dg.MaterializeResult:
    """The memory snapshot's materialisation: rows written and a preview of the last snapshot's busiest cells."""
    written, previews = run.written, run.previews
    snap = previews.get("memory_snapshot", pl.DataFrame())
    md = snap.filter(pl.col("n") > 0).sort("n", descending=True).head(12) if snap.height else snap
    return dg.MaterializeResult(
        asset_key=_key(family, "memory_snapshot"),
        metadata={
            "rows_this_run": written["memory_snapshot"],
            "variants": ", ".join(names),
            "feedback_rows_applied": run.feedback_applied,
            "last_snapshot": dg.MetadataValue.md(
                preview_md(md, n=12, columns=["source_family", "event_type", "horizon", "a", "b", "u_hat", "adjustment"])
            ),
        },
    )


def _tree_result(family: str, names: list[str], run: FamilyRun, s: Settings) -> dg.MaterializeResult:
    """The experience tree's materialisation: rows written, outcomes, and the last tree rendered."""
    written = run.written
    meta = {
        "rows_this_run": written["experience_tree"],
        "content_rows": written["experience_leaves"],
        "variants": ", ".join(names),
        "selections": written["principle_selections"],
        "updates": written["principle_updates"],
        "outcomes": dg.MetadataValue.json(run.toe_outcomes),
    }
    if run.last_tree is not None:
        vn, day, table = run.last_tree
        meta["tree"] = dg.MetadataValue.md(
            render_markdown(from_table(table, ToEParams.from_settings(s)), f"experience tree `{vn}` on {day}", max_leaves=12)
        )
    return dg.MaterializeResult(asset_key=_key(family, "experience_tree"), metadata=meta)


def _contexts_result(family: str, names: list[str], run: FamilyRun, params: MemoryParams) -> dg.MaterializeResult:
    """The contexts' materialisation: rows written, the memory strength used and a preview."""
    return dg.MaterializeResult(
        asset_key=_key(family, "contexts"),
        metadata={
            "rows_this_run": run.written["contexts"],
            "variants": ", ".join(names),
            "lambda": params.lam,
            "delta": params.delta,
            "kappa": params.kappa,
            "test_split_params": run.test_note,
            **({"memory_families": dg.MetadataValue.json(run.families)} if run.families else {}),
            "preview": dg.MetadataValue.md(preview_md(run.previews.get("contexts", pl.DataFrame()))),
        },
    )


def _reader_result(family: str, run: FamilyRun, backend) -> dg.MaterializeResult:
    """The reader outputs' materialisation: rows written, the backend, the reader's statistics and a preview."""
    return dg.MaterializeResult(
        asset_key=_key(family, "reader_outputs"),
        metadata={
            "rows_this_run": run.written["reader_outputs"],
            "backend": backend.name,
            "model": backend.model,
            "engine": "ray" if hasattr(backend, "replicas") else "local",
            **({"reader_replicas": len(backend.replicas)} if hasattr(backend, "replicas") else {}),
            **reader_metadata(run.stats),
            **({"days_not_read_before_test_split": sum(run.skipped.values())} if family in LORA_FAMILIES else {}),
            "preview": dg.MetadataValue.md(
                preview_md(run.previews.get("reader_outputs", pl.DataFrame()), columns=["anchor_id", "horizon", "signal", "valid_ids", "reason"])
            ),
        },
    )


def _priority(vs: list[Variant]) -> str:
    """The family's steps' priority when the families run at once (Dagster's multiprocess executor
    starts the highest first): its expected cost, so the longest start first and a family's feedback
    follows its loop. Measured on the demo, one process: a variant's loop about 10 s, twice that with
    the experience tree (shuffled families, five seeds: 41-49 s; toe families: 21-27 s)."""
    return str(len(vs) * (2 if vs[0].toe else 1))


def _loop_asset(
    family: str, vs: list[Variant], partitions_def, retry_policy: dg.RetryPolicy | None = None, pool: str | None = None
) -> dg.AssetsDefinition:
    """The family's loop multi-asset: runs the family day by day, then reports each output."""
    uses_memory = vs[0].uses_memory
    uses_toe = vs[0].toe

    @dg.multi_asset(
        name=f"{family}_loop",
        op_tags={"dagster/priority": _priority(vs)},
        specs=_loop_specs(family, uses_memory, uses_toe),
        check_specs=reader_check_specs(_key(family, "reader_outputs")),
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        can_subset=False,
        retry_policy=retry_policy,  # a reader server or an object store that fails for a while (defs/retries.py)
        pool=pool,  # one reader engine at a time on this machine (defs/pools.py)
        group_name=family,
        description=f"The feedback loop of variant family `{family}` ({', '.join(v.name for v in vs)}), stepped day by day.",
    )
    def loop(context: dg.AssetExecutionContext, config: ReaderConfig, finrag: FinragResource):
        s, params, backend, run = _run_loop(context, config, finrag, family, vs)
        names = [v.name for v in vs]
        for table, per_day in run.by_day.items():
            report_partition_rows(context, per_day, asset_key=_key(family, table))
        if uses_memory:
            yield _memory_result(family, names, run)
        if uses_toe:
            yield _tree_result(family, names, run, s)
        yield _contexts_result(family, names, run, params)
        yield _reader_result(family, run, backend)
        # blocking: a failed one stops this run's feedback and stock-day signals (defs/reader_checks.py)
        yield from reader_check_results(_key(family, "reader_outputs"), run.answers, s.checks)

    return loop


def _feedback_asset(family: str, vs: list[Variant], partitions_def) -> dg.AssetsDefinition:
    """The family's feedback asset: the lineage of its memory updates, per matured label."""

    @dg.asset(
        key=_key(family, "feedback"),
        op_tags={"dagster/priority": _priority(vs)},
        group_name=family,
        kinds={"parquet"},
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=[_key(family, "reader_outputs"), _key(family, "contexts"), "labels"],
        description=(
            "Lineage of the memory updates of this family: per anchor and matured horizon the prediction, label, "
            "credited families and weight. Rows exist only once close(D+h) is in prices (keyed by decision day D)."
        ),
    )
    def feedback(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        fb = family_feedback(finrag.settings(), finrag.lake(), finrag.calendar(), vs, days_of(context))
        report_partition_rows(context, fb.by_day)
        return dg.MaterializeResult(
            metadata={
                "rows_this_run": fb.rows,
                "matured_as_of": str(fb.as_of),
                "outcomes": dg.MetadataValue.json(fb.outcomes),
                "accuracy_matured": round(float(np.mean(fb.correct)), 4) if fb.correct else 0.0,
                **({"memory_families": dg.MetadataValue.json(fb.families)} if fb.families else {}),
            }
        )

    return feedback


def build_variant_assets(family: str, partitions_def, settings: Settings) -> list[dg.AssetsDefinition]:
    """A variant family's assets: its loop multi-asset and its feedback asset."""
    vs = variants_of(family, settings.memory.lam, settings.variants.shuffle_seeds, settings.lora.seeds)
    loop = _loop_asset(family, vs, partitions_def, reader_retry_policy(settings), reader_pool(settings))
    return [loop, _feedback_asset(family, vs, partitions_def)]
