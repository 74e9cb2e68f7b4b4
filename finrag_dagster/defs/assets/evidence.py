"""Evidence passages, event anchors and market-context cards, one partition per decision day."""

import dagster as dg
import polars as pl

from ...core.anchors import anchors_from_lake
from ...core.calendar import TradingCalendar
from ...core.context_card import write_cards
from ...core.engine import EngineSpec, use_engine
from ...core.evidence import pit_violations, write_evidence
from ...core.storage import lake as core_lake
from ...core.storage.lake import Lake
from ..context import days_of, step_errors_as_failures
from ..kit import daily_asset
from ..pools import EMBEDDING_POOL
from ..reporting import PIT_CHECK, SCHEMA_CHECK, check_schema, partition_meta, report_partition_rows
from ..resources import FinragResource


def require_partitions(lake: Lake, table: str, days: list[str]) -> None:
    """:func:`finrag_dagster.core.storage.lake.require_partitions`, failing the asset when a partition is missing."""
    with step_errors_as_failures():
        core_lake.require_partitions(lake, table, days)


def pit_check(lake: Lake, cal: TradingCalendar, table: str, days: list[str], time_col: str = "public_time") -> dg.AssetCheckResult:
    """Point-in-time: partition D holds only rows with close(D-1) < time <= decision_time(D)."""
    bad = pit_violations(lake, cal, table, days, time_col)
    return dg.AssetCheckResult(
        check_name=PIT_CHECK,
        passed=not bad,
        metadata={"partitions_checked": len(days), "violations": "; ".join(bad[:10]) or "none"},
    )


def build_evidence_asset(partitions_def) -> dg.AssetsDefinition:
    @daily_asset(
        "evidence",
        "evidence",
        partitions_def,
        ["news_raw", "filings_raw", "universe"],
        pool=EMBEDDING_POOL,  # MiniLM embedding: one at a time on this machine (defs/pools.py)
        checks=[(PIT_CHECK, "close(D-1) < public_time <= close(D)"), SCHEMA_CHECK],
        description=(
            "Timestamped passages: one per news item, item sections of each filing (seed 000 §3.3), "
            "with a MinHash near-duplicate cluster (earliest predecessor within the look-back) and a "
            "frozen all-MiniLM-L6-v2 embedding. Partition D = passages decided on D."
        ),
    )
    def evidence(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        from ...sources.edgar import split_filing_passages

        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        s = finrag.settings()
        with step_errors_as_failures(), use_engine(EngineSpec.from_settings(s)) as eng:
            run = write_evidence(s, lake, cal, days, split_filing_passages, log=context.log.info)
            where = {"engine": eng.name} | ({"engine_cpus": eng.parallelism} if eng.name == "ray" else {})
        counts, fam_counts, preview = run.counts, run.by_family, run.preview
        meta = partition_meta(
            counts,
            preview if preview is not None else pl.DataFrame(),
            lake,
            "evidence",
            columns=["passage_id", "source_family", "ticker", "public_time", "item", "title", "dup_cluster"],
        )
        report_partition_rows(context, counts)
        meta["passages_by_family"] = dg.MetadataValue.json(fam_counts)
        meta.update(where)  # where the embedding ran
        return dg.MaterializeResult(metadata=meta, check_results=[pit_check(lake, cal, "evidence", days), check_schema(lake, "evidence", days)])

    return evidence


def build_anchors_asset(partitions_def) -> dg.AssetsDefinition:
    @daily_asset(
        "anchors",
        "evidence",
        partitions_def,
        ["news_raw", "evidence"],
        checks=[(PIT_CHECK, "public_time <= decision_time = close(D)"), SCHEMA_CHECK],
        description=(
            "News event anchors of decision day D (seed 000 §3.1): ticker, public and decision time, "
            "session bucket, headline and the Table 5 event type (largest cue count; ties or none -> "
            "Other/Mixed). Near-duplicate re-reports of an earlier anchor are removed."
        ),
    )
    def anchors(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        counts, n_dropped, types = {}, 0, {}
        parts = []
        built = anchors_from_lake(s, lake, cal, days)
        for d in days:
            a, dropped = built[d]
            _, counts[d] = lake.write("anchors", a, date=d)
            n_dropped += dropped.height
            for t, n in a.group_by("event_type").len().rows():
                types[t] = types.get(t, 0) + n
            if a.height and len(parts) < 1:
                parts.append(a)
        meta = partition_meta(
            counts,
            parts[0] if parts else pl.DataFrame(),
            lake,
            "anchors",
            columns=["anchor_id", "ticker", "public_time", "session", "event_type", "headline"],
        )
        report_partition_rows(context, counts)
        meta["event_types"] = dg.MetadataValue.json(dict(sorted(types.items())))
        meta["re_reports_removed"] = n_dropped
        return dg.MaterializeResult(metadata=meta, check_results=[pit_check(lake, cal, "anchors", days), check_schema(lake, "anchors", days)])

    return anchors


def build_cards_asset(partitions_def) -> dg.AssetsDefinition:
    @daily_asset(
        "context_cards",
        "evidence",
        partitions_def,
        ["returns", "universe"],
        checks=[("market_bar_present", "the market proxy has a bar on D"), SCHEMA_CHECK],
        description=(
            "Market-context card per ticker and decision day (seed 000 App. B): prior 1D/5D/20D returns, "
            "relative to QQQ, realised-volatility state and market trend, from adjusted closes up to "
            "close(D) only; thresholds in settings.cards."
        ),
    )
    def context_cards(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        counts, missing, first = write_cards(s, lake, cal, days)
        meta = partition_meta(
            counts,
            first if first is not None else pl.DataFrame(),
            lake,
            "context_cards",
            columns=["ticker", "ret_1d", "ret_5d", "ret_20d", "momentum_state", "risk_state", "market_trend"],
        )
        report_partition_rows(context, counts)
        if first is not None:
            meta["example_card"] = dg.MetadataValue.md("```\n" + first["card_text"][0] + "\n```")
        check = dg.AssetCheckResult(
            check_name="market_bar_present",
            passed=not missing,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={"days_without_market_bar": ", ".join(missing[:20]) or "none", "count": len(missing)},
        )
        return dg.MaterializeResult(metadata=meta, check_results=[check, check_schema(lake, "context_cards", days)])

    return context_cards
