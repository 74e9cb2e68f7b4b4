"""How far a source memory can reach at all: the ceiling of eq. 6 on a lake's candidate pools.

Seed 000 eq. 6 scores a passage r + λ·mean_h adj(family, event type, h) with every adj clipped to
[−δ, δ], so the memory moves two passages of different families apart by at most 2λδ and never
moves passages of one family relative to each other. Whatever the memory has learned, a pool's
top-m can change only if it holds a passage of some family F below rank m whose relevance is
within 2λδ of a top-m passage of another family. :func:`pool_reach` measures that per pool with
the most favourable utilities (F at +δ, every other family at −δ); :func:`reach_summary` sums it
up. No reader, feedback or truth file is needed: only the candidates table.
"""

from __future__ import annotations

import polars as pl


def pool_reach(candidates: pl.DataFrame, lam: float, delta: float, m: int = 5) -> pl.DataFrame:
    """Per anchor: families in the pool, r(m)−r(m+1) and r(m−1)−r(m+2) (static relevance by rank), and
    whether a memory term bounded by λδ per family could change its top-m (seed 000 eq. 6)."""
    c = candidates.select("anchor_id", "rank", "relevance", "source_family").sort("anchor_id", "rank")
    top = c.filter(pl.col("rank") <= m)
    out = c.filter(pl.col("rank") > m)
    best_out = out.group_by("anchor_id", "source_family").agg(pl.col("relevance").max().alias("r_out"))
    # the weakest top-m passage of a family other than F, for each F that has a passage below rank m
    pairs = best_out.join(top.select("anchor_id", pl.col("source_family").alias("f_in"), pl.col("relevance").alias("r_in")), on="anchor_id")
    pairs = pairs.filter(pl.col("f_in") != pl.col("source_family"))
    reach = pairs.group_by("anchor_id").agg(((pl.col("r_in") - pl.col("r_out")).min() < 2 * lam * delta).alias("reachable"))
    at = {k: c.filter(pl.col("rank") == k).select("anchor_id", pl.col("relevance").alias(f"r{k}")) for k in (m - 1, m, m + 1, m + 2)}
    per = c.group_by("anchor_id").agg(pl.col("source_family").n_unique().alias("families"), pl.len().alias("pool"))
    for t in at.values():
        per = per.join(t, on="anchor_id", how="left")
    return (
        per.join(reach, on="anchor_id", how="left")
        .with_columns(
            (pl.col(f"r{m}") - pl.col(f"r{m + 1}")).alias("gap_5_6"),
            (pl.col(f"r{m - 1}") - pl.col(f"r{m + 2}")).alias("gap_4_7"),
            pl.col("reachable").fill_null(False),
        )
        .select("anchor_id", "pool", "families", "gap_5_6", "gap_4_7", "reachable")
        .sort("anchor_id")
    )


def reach_summary(per: pl.DataFrame) -> dict[str, float]:
    """Pools, the share holding two or more families, the median 5–6 and 4–7 gaps, and the share of pools a memory could change."""
    n = per.height
    if n == 0:
        return {"pools": 0}
    return {
        "pools": n,
        "mixed_share": per.filter(pl.col("families") >= 2).height / n,
        "gap_5_6_median": float(per["gap_5_6"].median()),
        "gap_4_7_median": float(per["gap_4_7"].median()),
        "reachable_share": per.filter(pl.col("reachable")).height / n,
    }


__all__ = ["pool_reach", "reach_summary"]
