"""Evidence passages, event anchors and market-context cards, one partition per decision day."""


import datetime as dt

import dagster as dg
import numpy as np
import polars as pl

from ...core.anchors import anchors_for_days
from ...core.calendar import lookback_days
from ...core.progress import track
from ...core.calendar import TradingCalendar
from ...core.context_card import build_cards, empty_cards
from ...core.dedup import ClusterIndex
from ...core.evidence import dup_items, filing_passages, finish_evidence, news_passages
from ...core.lake import Lake
from ..context import days_of
from ..reporting import check_schema, partition_meta
from ..resources import FinragResource


def require_partitions(lake: Lake, table: str, days: list[str]) -> None:
    missing = [d for d in days if not lake.exists(table, date=d)]
    if missing:
        raise dg.Failure(
            f"{table} partitions {missing[0]} .. {missing[-1]} ({len(missing)}) are not materialised; "
            f"they are needed as look-back history. Materialise {table} from the start of the range first.",
        )


def _split(df: pl.DataFrame, day: str) -> pl.DataFrame:
    return df.filter(pl.col("date") == dt.date.fromisoformat(day)).drop("date")


def pit_check(lake: Lake, cal: TradingCalendar, table: str, days: list[str], time_col: str = "public_time") -> dg.AssetCheckResult:
    """Point-in-time: partition D holds only rows with close(D-1) < time <= decision_time(D)."""
    bad = []
    for d in days:
        df = lake.read(table, dates=[d], columns=[time_col])
        if df.height == 0:
            continue
        i = cal.session_index(d)
        hi = int(cal.closes_ns[i])
        lo = int(cal.closes_ns[i - 1]) if i > 0 else -(2**62)
        t = df[time_col].dt.epoch("ns").to_numpy()
        n_bad = int(np.sum((t > hi) | (t <= lo)))
        if n_bad:
            bad.append(f"{d}: {n_bad}")
    return dg.AssetCheckResult(
        check_name="point_in_time",
        passed=not bad,
        metadata={"partitions_checked": len(days), "violations": "; ".join(bad[:10]) or "none"},
    )


def build_evidence_asset(partitions_def) -> dg.AssetsDefinition:
    @dg.asset(
        name="evidence",
        group_name="evidence",
        kinds={"parquet"},
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=["news_raw", "filings_raw", "universe"],
        description=(
            "Timestamped passages: one per news item, item sections of each filing (seed 000 §3.3), "
            "with a MinHash near-duplicate cluster (earliest predecessor within the look-back) and a "
            "frozen all-MiniLM-L6-v2 embedding. Partition D = passages decided on D."
        ),
        check_specs=[
            dg.AssetCheckSpec("point_in_time", asset="evidence", description="close(D-1) < public_time <= close(D)"),
            dg.AssetCheckSpec("schema", asset="evidence"),
        ],
    )
    def evidence(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        from ...sources.edgar import split_filing_passages

        s = finrag.settings()
        es = s.evidence
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        uni = lake.read("universe")
        sectors = dict(zip(uni["ticker"], uni["sector"]))
        hist_days = lookback_days(cal, days[0], es.dup_lookback_sessions, s.calendar.start)
        require_partitions(lake, "evidence", hist_days)
        history = lake.read("evidence", dates=hist_days, columns=["passage_id", "public_time", "text", "dup_cluster"])
        index = ClusterIndex(es.dup_threshold, es.minhash_perm)
        index.add_history(dup_items(history, with_cluster=True))
        news = lake.read("news_raw", dates=days)
        filings = lake.read("filings_raw", dates=days)
        counts: dict[str, int] = {}
        fam_counts = {"news": 0, "sec_filing": 0}
        preview = None
        for d in track(days, len(days), "evidence (dedup + embedding)", log=context.log.info, every=20):
            i = cal.session_index(d)
            if i - es.dup_lookback_sessions - 1 >= 0:
                index.evict_before((int(cal.closes_ns[i - es.dup_lookback_sessions - 1]) + 1, ""))
            passages = pl.concat(
                [
                    news_passages(_split(news, d), sectors, es.news_text_max_chars),
                    filing_passages(_split(filings, d), sectors, split_filing_passages, es.passage_max_words),
                ]
            )
            ev = finish_evidence(passages, index, es.embed_batch_size, es.embed_max_seq_length)
            _, counts[d] = lake.write("evidence", ev, date=d)
            for fam, n in ev.group_by("source_family").len().rows():
                fam_counts[fam] += n
            if preview is None and ev.height:
                preview = ev
        meta = partition_meta(counts, preview if preview is not None else pl.DataFrame(), lake, "evidence",
                              columns=["passage_id", "source_family", "ticker", "public_time", "item", "title", "dup_cluster"])
        meta["passages_by_family"] = dg.MetadataValue.json(fam_counts)
        return dg.MaterializeResult(metadata=meta, check_results=[pit_check(lake, cal, "evidence", days), check_schema(lake, "evidence", days)])

    return evidence


def build_anchors_asset(partitions_def) -> dg.AssetsDefinition:
    @dg.asset(
        name="anchors",
        group_name="evidence",
        kinds={"parquet"},
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=["news_raw", "evidence"],
        description=(
            "News event anchors of decision day D (seed 000 §3.1): ticker, public and decision time, "
            "session bucket, headline and the Table 5 event type (largest cue count; ties or none -> "
            "Other/Mixed). Near-duplicate re-reports of an earlier anchor are removed."
        ),
        check_specs=[
            dg.AssetCheckSpec("point_in_time", asset="anchors", description="public_time <= decision_time = close(D)"),
            dg.AssetCheckSpec("schema", asset="anchors"),
        ],
    )
    def anchors(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        uni = lake.read("universe")
        sectors = dict(zip(uni["ticker"], uni["sector"]))
        bench = set(uni.filter(pl.col("is_benchmark"))["ticker"].to_list())
        window = lookback_days(cal, days[0], s.evidence.dup_lookback_sessions, s.calendar.start) + days
        clusters = lake.read("evidence", dates=window, columns=["passage_id", "ticker", "dup_cluster"])
        news = lake.read("news_raw", dates=days)
        membership = lake.read("membership") if s.sources.membership else None
        counts, n_dropped, types = {}, 0, {}
        parts = []
        built = anchors_for_days(news, clusters, days, cal, bench, sectors, s.evidence.dup_lookback_sessions,
                                 s.calendar.start, membership)
        for d in days:
            a, dropped = built[d]
            _, counts[d] = lake.write("anchors", a, date=d)
            n_dropped += dropped.height
            for t, n in a.group_by("event_type").len().rows():
                types[t] = types.get(t, 0) + n
            if a.height and len(parts) < 1:
                parts.append(a)
        meta = partition_meta(counts, parts[0] if parts else pl.DataFrame(), lake, "anchors",
                              columns=["anchor_id", "ticker", "public_time", "session", "event_type", "headline"])
        meta["event_types"] = dg.MetadataValue.json(dict(sorted(types.items())))
        meta["re_reports_removed"] = n_dropped
        return dg.MaterializeResult(metadata=meta, check_results=[pit_check(lake, cal, "anchors", days), check_schema(lake, "anchors", days)])

    return anchors


def build_cards_asset(partitions_def) -> dg.AssetsDefinition:
    @dg.asset(
        name="context_cards",
        group_name="evidence",
        kinds={"parquet"},
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=["returns", "universe"],
        description=(
            "Market-context card per ticker and decision day (seed 000 App. B): prior 1D/5D/20D returns, "
            "relative to QQQ, realised-volatility state and market trend, from adjusted closes up to "
            "close(D) only; thresholds in settings.cards."
        ),
        check_specs=[
            dg.AssetCheckSpec("market_bar_present", asset="context_cards", description="the market proxy has a bar on D"),
            dg.AssetCheckSpec("schema", asset="context_cards"),
        ],
    )
    def context_cards(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        market = s.market_ticker
        rets = lake.read("returns", dates=days)
        counts, missing, first = {}, [], None
        for d in days:
            r = _split(rets, d)
            if r.filter(pl.col("ticker") == market).height != 1:
                missing.append(d)
                cards = empty_cards()
            else:
                cards = build_cards(r, market, d, s.cards)
            cards = cards.with_columns(pl.lit(cal.close_time(d)).dt.cast_time_unit("us").alias("as_of"))
            _, counts[d] = lake.write("context_cards", cards, date=d)
            if first is None and cards.height:
                first = cards
        meta = partition_meta(counts, first if first is not None else pl.DataFrame(), lake, "context_cards",
                              columns=["ticker", "ret_1d", "ret_5d", "ret_20d", "momentum_state", "risk_state", "market_trend"])
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
