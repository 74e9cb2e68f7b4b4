"""The reach of eq. 6: a pool's top 5 can change only across families and within 2λδ."""

import polars as pl

from finrag_dagster.core.evaluation.reach import pool_reach, reach_summary
from finrag_dagster.core.memory.source_memory import MemoryParams, SourceMemory, rerank


def _pool(anchor: str, rel: list[float], fams: list[str]) -> pl.DataFrame:
    n = len(rel)
    return pl.DataFrame(
        {
            "anchor_id": [anchor] * n,
            "passage_id": [f"{anchor}-{i}" for i in range(n)],
            "rank": list(range(1, n + 1)),
            "relevance": rel,
            "source_family": fams,
        }
    )


def test_reachable_exactly_when_a_most_favourable_memory_changes_the_top5():
    """Checked against the pipeline's own rerank with the extreme memory (one family at +δ, the other at −δ)."""
    rel = [1.0, 0.9, 0.8, 0.7, 0.6, 0.55, 0.3, 0.2]
    pools = pl.concat(
        [
            _pool("close", rel, ["news"] * 5 + ["sec_filing"] + ["news"] * 2),  # 0.6 - 0.55 < 2 * 0.3 * 0.2
            _pool("far", [1.0, 0.9, 0.8, 0.7, 0.6, 0.45, 0.3, 0.2], ["news"] * 5 + ["sec_filing"] + ["news"] * 2),  # 0.15 > 0.12
            _pool("one_family", rel, ["news"] * 8),
        ]
    )
    per = pool_reach(pools, lam=0.3, delta=0.2)
    got = dict(zip(per["anchor_id"], per["reachable"]))
    assert got == {"close": True, "far": False, "one_family": False}
    mem = SourceMemory(MemoryParams(delta=0.2))
    for h in ("1D", "3D", "5D"):  # saturate: sec far above 0.5, news far below
        mem.add("sec_filing", "E", h, 1000.0, True)
        mem.add("news", "E", h, 1000.0, False)
    keys = dict.fromkeys(pools["anchor_id"].unique().to_list(), "E")
    top = rerank(pools.with_columns(pl.lit("x").alias("ticker")), keys, mem, 0.3, 5)
    static = set(pools.filter(pl.col("rank") <= 5)["passage_id"])
    changed = {a for a, g in top.group_by("anchor_id") for a in [a[0]] if set(g["passage_id"]) != {p for p in static if p.startswith(a + "-")}}
    assert changed == {"close"}
    s = reach_summary(per)
    assert s["pools"] == 3 and abs(s["mixed_share"] - 2 / 3) < 1e-12 and abs(s["reachable_share"] - 1 / 3) < 1e-12
    assert abs(s["gap_5_6_median"] - 0.05) < 1e-12
