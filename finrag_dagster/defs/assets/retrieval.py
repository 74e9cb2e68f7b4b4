"""Candidate pools per decision day (seed 000 §3.3)."""

import dagster as dg
import numpy as np
import polars as pl

from ...core.retrieval.candidates import candidates_for_days
from ...core.retrieval.store_cache import load_store
from ..context import days_of
from ..kit import daily_asset
from ..reporting import SCHEMA_CHECK, check_schema, partition_meta, report_partition_rows
from ..resources import FinragResource
from .evidence import require_partitions


def build_candidates_asset(partitions_def) -> dg.AssetsDefinition:
    @daily_asset(
        "candidates",
        "retrieval",
        partitions_def,
        ["anchors", "evidence"],
        checks=[("no_future_evidence", "every candidate was public before decision_time(D)"), SCHEMA_CHECK],
        description=(
            "Point-in-time candidate pool per anchor (seed 000 §3.3): passages public before decision_time(D) "
            "only (filter first, then score); anchor, same URL, same title and the anchor's near-duplicate "
            "cluster removed; company first, same-sector peers at most 20%; M0 = 20. BM25 statistics come from "
            "the corpus public before decision_time(D); r = mean of min-max BM25 and min-max MiniLM cosine "
            "within the pool. The evidence store is kept under <lake>/_staging/candidates_store and extended with "
            "the evidence days it has not seen, so a daily run does not re-read the history (identical pools; rebuilt "
            "when an evidence day it holds was re-materialised)."
        ),
    )
    def candidates(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s = finrag.settings()
        rs = s.retrieval
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        history = [d.isoformat() for d in cal.sessions_in_range(s.calendar.start, days[-1])]
        require_partitions(lake, "evidence", history)
        store, rep = load_store(lake, history, {"start": history[0]}, log=context.log.info)
        anchors = lake.read("anchors", dates=days)
        out = candidates_for_days(
            store,
            anchors,
            days,
            cal,
            params=rs,
            log=context.log.info,
        )
        meta, future = write_pools(lake, store, cal, anchors, days, out)
        report_partition_rows(context, {d: out[d].height for d in days})
        meta.update(
            {
                "store_passages": rep.rows,
                "store_evidence_rows_read": rep.rows_read,
                "store_segments": rep.segments,
                "store_rebuilt": rep.rebuilt or "no",
            }
        )
        check = dg.AssetCheckResult(check_name="no_future_evidence", passed=future == 0, metadata={"future_candidates": future})
        return dg.MaterializeResult(metadata=meta, check_results=[check, check_schema(lake, "candidates", days)])

    return candidates


def write_pools(lake, store, cal, anchors: pl.DataFrame, days: list[str], out: dict[str, pl.DataFrame]) -> tuple[dict, int]:
    """Write each day's pools; (the materialisation's metadata: partition counts, pool sizes, peer
    share, SEC coverage; how many candidates were public at or after their day's close, which the
    ``no_future_evidence`` check requires to be 0)."""
    counts, first = {}, None
    n_anchor = n_empty = n_sec = 0
    sizes, peers, future = [], [], 0
    for d in days:
        c = out[d]
        _, counts[d] = lake.write("candidates", c, date=d)
        a = anchors.filter(pl.col("date") == pl.lit(d).str.to_date())
        n_anchor += a.height
        n_empty += a.height - c["anchor_id"].n_unique()
        if c.height:
            g = c.group_by("anchor_id").agg(
                pl.len().alias("n"), (pl.col("source_family") == "sec_filing").any().alias("sec"), pl.col("is_peer").mean().alias("peer")
            )
            sizes += g["n"].to_list()
            peers += g["peer"].to_list()
            n_sec += int(g["sec"].sum())
            close = int(cal.closes_ns[cal.session_index(d)])
            future += int((store.public_ns[[store.row_of[p] for p in c["passage_id"].to_list()]] >= close).sum())
            if first is None:
                first = c
    columns = ["anchor_id", "passage_id", "rank", "bm25", "dense", "relevance", "is_peer", "source_family"]
    meta = partition_meta(counts, first if first is not None else pl.DataFrame(), lake, "candidates", columns=columns)
    meta.update(
        {
            "anchors": n_anchor,
            "anchors_with_empty_pool": n_empty,
            "mean_pool_size": float(np.mean(sizes)) if sizes else 0.0,
            "mean_peer_share": float(np.mean(peers)) if peers else 0.0,
            "sec_coverage": (n_sec / (n_anchor - n_empty)) if n_anchor > n_empty else 0.0,
        }
    )
    return meta, future
