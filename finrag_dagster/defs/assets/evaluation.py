"""Evaluation you can show: seed 000 Tables 2/3/4 (test split), Table 6 (validation) and the report.

The computations are core/evaluation/ (tables.py, sensitivity.py, report.py); these assets call
them and put the tables in their metadata.
"""

import dagster as dg
import polars as pl

from ...core.evaluation.changes import change_sentence, changes_md, family_rows, memory_changes
from ...core.evaluation.report import report_path, write_report
from ...core.evaluation.sensitivity import table6
from ...core.evaluation.tables import METRICS, PCT, PORTFOLIO, metrics_md, run_evaluation, table2_rows
from ...core.settings import Settings
from ..context import step_errors_as_failures
from ..kit import table_asset
from ..pools import reader_pool
from ..resources import FinragResource


def build_evaluation_assets(s: Settings) -> list[dg.AssetsDefinition]:
    """The evaluation group: Tables 2-4, Table 6 and the report (the work is in core.evaluation)."""
    return [evaluation_asset([dg.AssetKey([f, "reader_outputs"]) for f in s.variants.families]), sensitivity_asset(reader_pool(s)), report_asset()]


def evaluation_asset(fam_outputs: list[dg.AssetKey]) -> dg.AssetsDefinition:
    """seed 000 Tables 2-4 over every family's reader outputs."""

    @table_asset(
        "evaluation",
        "evaluation",
        ["stock_day_signals", "labels", "table1_audit", "returns", *fam_outputs],
        kinds=("parquet", "scikit-learn"),
        description=(
            "seed 000 Table 2 (event-level quality per variant), Table 3 (validity checks, mean +- std over the "
            "shuffles) and Table 4 (the 3D portfolio diagnostic, 10 bps turnover cost, vs QQQ and the equal-weight "
            "universe) on the validation and test splits; daily books in portfolio_daily."
        ),
    )
    def evaluation(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s2 = finrag.settings()
        ev = run_evaluation(s2, finrag.lake(), finrag.calendar())
        test = ev.filter(pl.col("split") == "test")
        t2 = metrics_md(test.filter(pl.col("table") == "Table 2"), table2_rows(test), METRICS)
        t4 = metrics_md(
            test.filter(pl.col("table") == "Table 4"), sorted(set(test.filter(pl.col("table") == "Table 4")["row"].to_list())), PORTFOLIO, PCT
        )
        summary, _, reach = memory_changes(s2, finrag.lake(), finrag.calendar(), "test")
        return dg.MaterializeResult(
            metadata={
                "table_2_test": dg.MetadataValue.md(t2),
                "table_4_test": dg.MetadataValue.md(t4),
                "memory_changes_test": dg.MetadataValue.md(changes_md(summary, reach)),
                **{f"memory_changed {r['family']}": change_sentence(r) for r in family_rows(summary)},
                "rows": ev.height,
                "dagster/row_count": ev.height,
                "report": dg.MetadataValue.path(str(report_path(s2))),
            }
        )

    return evaluation


def sensitivity_asset(pool: str | None = None) -> dg.AssetsDefinition:
    """seed 000 Table 6 on the validation split (it re-runs the reader: the loops' pool)."""

    @table_asset(
        "sensitivity",
        "evaluation",
        ["candidates", "anchors", "context_cards", "labels", "returns"],
        pool=pool,  # a reader engine on this machine: one at a time (defs/pools.py)
        description=(
            "seed 000 Table 6: lambda in {0,.1,.2,.3,.5} at delta=.2 and delta in {.05,.1,.15,.2,.3} at lambda=.3, "
            "source memory re-run on the validation split, scored on the labels matured before the test split starts; "
            "the selection rule picks the best non-neutral F1, then Sharpe, and the test split runs with it "
            "(memory.test_params = selected). Runs before the loop."
        ),
    )
    def sensitivity(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s2 = finrag.settings()
        with step_errors_as_failures():
            t6 = table6(s2, finrag.lake(), finrag.calendar())
        if t6.best is None:
            return dg.MaterializeResult(metadata={"dagster/row_count": 0, "note": "no validation days materialised"})
        best, df = t6.best, t6.table
        return dg.MaterializeResult(
            metadata={
                "dagster/row_count": df.height,
                "selected_lambda": best["lambda"],
                "selected_delta": best["delta"],
                "used_for_test": (
                    f"lambda={best['lambda']}, delta={best['delta']} (memory.test_params = selected)"
                    if s2.memory.test_params == "selected"
                    else f"lambda={s2.memory.lam}, delta={s2.memory.delta} (memory.test_params = settings)"
                ),
                "labels_used": f"{t6.labels_used} of {t6.labels_all} validation label rows (those matured before {t6.used_from})",
                "table_6": dg.MetadataValue.md(
                    metrics_md(df, sorted(set(df["row"].to_list()) - {"selected"}), ["Non-neutral F1", "Macro-F1", "Rank IC", "Sharpe"])
                ),
            }
        )

    return sensitivity


def report_asset() -> dg.AssetsDefinition:
    """The HTML report."""

    @table_asset(
        "report",
        "evaluation",
        ["evaluation", "sensitivity", "table1_audit", "experience_task"],
        kinds=("html",),
        description=(
            "Self-contained HTML report: Tables 1-4 and 6, cumulative net returns (Figure 2), source-memory utilities over time, "
            "label mix, citation validity; the experience trees and the experience task's tsIC/csIC tables."
        ),
    )
    def report(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s2 = finrag.settings()
        path = write_report(s2, finrag.lake())
        ev = finrag.lake().read("evaluation").filter((pl.col("split") == "test") & (pl.col("table") == "Table 4") & (pl.col("metric") == "Sharpe"))
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(str(path)),
                "url": dg.MetadataValue.url(path.resolve().as_uri()),
                **{f"Sharpe {r}": v for r, v in zip(ev["row"], ev["value"]) if v is not None},
            }
        )

    return report
