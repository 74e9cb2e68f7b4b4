"""The Tree-of-Experience snapshot per trading day (seed 002 §4.2) and seed 002's experience task.

Thin assets: core/experience/prior.py induces and carries the prior tree and writes it
(state and content, core/experience/store.py), core/experience/tree.py draws it for
the UI, and core/evaluation/experience.py runs the experience task over the lake.
"""

import dagster as dg

from ...core.evaluation.experience import run_experience_task, task_md
from ...core.experience.prior import TREE_ID, write_prior_trees
from ...core.experience.tree import ExperienceTree, ToEParams, render_markdown
from ...core.storage.lake import Lake
from ..context import days_of, step_errors_as_failures
from ..kit import daily_asset, table_asset
from ..reporting import SCHEMA_CHECK, report_partition_rows
from ..resources import FinragResource


def schema_check(lake: Lake, days: list[str]) -> dg.AssetCheckResult:
    """Every written state and content partition of ``days`` carries exactly its declared schema."""

    spec, content = lake.spec("experience_tree"), lake.spec("experience_leaves")
    bad = [
        d
        for d in days
        if not lake.is_file(f := lake.path("experience_tree", tree_id=TREE_ID, date=d))
        or not lake.read_schema(f).remove_metadata().equals(spec.schema)
        or (
            lake.is_file(c := lake.path("experience_leaves", tree_id=TREE_ID, date=d))
            and not lake.read_schema(c).remove_metadata().equals(content.schema)
        )
    ]
    return dg.AssetCheckResult(
        check_name=SCHEMA_CHECK, passed=not bad, metadata={"partitions_checked": len(days), "failing": ", ".join(bad[:10]) or "none"}
    )


def build_experience_tree_asset(partitions_def) -> dg.AssetsDefinition:
    @daily_asset(
        "experience_tree",
        "experience",
        partitions_def,
        checks=[SCHEMA_CHECK],
        deps=[
            dg.AssetDep(
                "experience_tree",
                partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1, allow_nonexistent_upstream_partitions=True),
            ),
            "news_raw",
            "evidence",
            "universe",
        ],
        description=(
            "Tree-of-Experience snapshot used on decision day D (seed 002 §4.2, Table 5), one row per leaf: "
            "factor -> analytical principle, Q per horizon, recall/hit. Stored as the day's state (experience_tree: "
            "position, id, Q, recall/hit) and the content written once (experience_leaves, dated the day a position's "
            "factor, principle and embedding first appeared); the tree of D reads content dated <= D only. On the "
            "induction day (the last session of the train split) the tree is induced (eqs 3-5) from train-split "
            "anchors decided before that day only (rebuilt from news_raw/evidence with the anchors rule; rule skeletons clustered by MiniLM cosine, or LLM "
            "rewrites with an LLM reader); Q_init = q0. Afterwards snapshot(D) = snapshot(D-1): there are no utility "
            "updates here — updates from matured feedback come with the toe variants (`toe/experience_tree`). Days before "
            "the induction day hold an empty snapshot (no tree yet)."
        ),
    )
    def experience_tree(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        with step_errors_as_failures():
            run = write_prior_trees(s, lake, cal, days)
        report_partition_rows(context, {d: lake.num_rows(lake.path("experience_tree", tree_id=TREE_ID, date=d)) for d in days})
        meta = {
            "tree_id": TREE_ID,
            "induction_day": run.induction_day or "none (no train split inside the calendar)",
            "partitions": dg.MetadataValue.json(run.kinds),
            "content_rows_written": run.content_rows,
            "path": dg.MetadataValue.path(lake.location("experience_tree")),
            "dagster/uri": lake.location("experience_tree"),
        }
        tree = run.tree
        if tree is not None:
            meta["factors"] = len(tree.factors)
            meta["principles"] = len(tree.leaves())
            meta["tree"] = dg.MetadataValue.md(render_markdown(tree, f"experience tree `{TREE_ID}` on {days[-1]}"))
        else:
            meta["tree"] = dg.MetadataValue.md(
                render_markdown(ExperienceTree([], ToEParams.from_settings(s)), f"experience tree `{TREE_ID}` on {days[-1]}")
            )
        if run.report is not None:
            meta["induction"] = dg.MetadataValue.json(run.report.as_dict())
        return dg.MaterializeResult(
            metadata=meta,
            check_results=[schema_check(lake, days)],
        )

    return experience_tree


def build_experience_task_asset() -> dg.AssetsDefinition:
    @table_asset(
        "experience_task",
        "experience",
        ["anchors", "news_raw", "prices", "universe", "experience_tree"],
        description=(
            "The experience task of seed 002 (FinEvolveBench protocol, US version) on the test split: sector targets "
            "(equal-weight sector returns), scores in [-1, 1] for h in {1, 5, 10, 20} from the news of days T-4..T, "
            "outcome alpha = sector return - QQQ return released only after maturity; Baseline, Pipe, Pipe+mem0, "
            "Pipe+MemRL, Pipe+ToE (formula) and Pipe+ToE (LLM, with an LLM reader); tsIC (Table 1), csIC (Table 6) "
            "and the update-strategy ablation (Table 2). Scores in experience_task_scores."
        ),
    )
    def experience_task(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        run = run_experience_task(finrag.settings(), finrag.lake(), finrag.calendar())
        if run.results is None:
            return dg.MaterializeResult(metadata={"dagster/row_count": 0, "test_days": 0, "note": run.note})
        return dg.MaterializeResult(
            metadata={
                "dagster/row_count": run.results.height,  # the experience_task table's rows
                "test_days": run.test_days,
                "targets": run.targets,
                "methods": ", ".join(run.methods),
                "note": run.note,
                "table_1_tsIC": dg.MetadataValue.md(task_md(run.results, "Table 1")),
                "table_6_csIC": dg.MetadataValue.md(task_md(run.results, "Table 6")),
                "table_2_update": dg.MetadataValue.md(task_md(run.results, "Table 2")),
            }
        )

    return experience_task
