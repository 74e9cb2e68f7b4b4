"""Does the source memory learn the planted source utilities? (the memory oracle)

Compares learned cells (source family, event type, horizon) with the synthetic world's planted
probability that a document's tone agrees with the event's true direction.
"""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl

from ..memory.source_memory import FAMILIES, MemoryParams, SourceMemory


def planted_table(utility: pl.DataFrame) -> pl.DataFrame:
    """truth/source_utility.parquet → source_family, event_type, horizon ("1D"), planted."""
    return utility.select(
        "source_family", "event_type", (pl.col("horizon").cast(pl.Utf8) + "D").alias("horizon"), pl.col("planted_prob").alias("planted")
    )


def _is_broad(snapshot: pl.DataFrame) -> bool:
    return set(snapshot["source_family"].to_list()) <= set(FAMILIES) if snapshot.height else True


def planted_for(snapshot: pl.DataFrame, planted: pl.DataFrame) -> pl.DataFrame:
    """The planted utility of each family the snapshot holds. Seed 000's families as the truth file
    names them; under memory.families = "fine", ``news:<class>`` by the truth rows of that name
    (world.publisher_utility) and every ``sec:<kind>`` by the broad filing row (the world plants no
    filing kind apart from the others). ``news:other`` has no planted utility and is left out."""
    fams = set(snapshot["source_family"].to_list()) if snapshot.height else set()
    have = set(planted["source_family"].to_list())
    news_classes = sorted(f for f in fams if f.startswith("news:") and f != "news:other")
    if news_classes and not set(news_classes) & have:
        raise ValueError(
            f"the snapshot keeps news by publisher class ({', '.join(news_classes)}; memory.families = 'fine') but the "
            "world's source_utility.parquet plants none: build the world with world.publisher_utility = true"
        )
    parts = [planted.filter(pl.col("source_family").is_in(sorted(fams & have)))]
    for f in sorted(x for x in fams - have if x.startswith("sec:")):
        parts.append(planted.filter(pl.col("source_family") == "sec_filing").with_columns(pl.lit(f).alias("source_family")))
    return pl.concat(parts)


def family_ordering(snapshot: pl.DataFrame, planted: pl.DataFrame, min_n: float = 100) -> pl.DataFrame:
    """Per (event type, horizon) where both families have n >= min_n: does the family with the
    higher learned û have the higher planted utility? A snapshot of the finer families: every pair
    of the cell's families with n >= min_n and different planted utilities (:func:`fine_ordering`)."""
    if not _is_broad(snapshot):
        return fine_ordering(snapshot, planted, min_n)
    j = snapshot.join(planted, on=["source_family", "event_type", "horizon"])
    rows = []
    for (c, h), g in j.group_by(["event_type", "horizon"], maintain_order=True):
        if g.height != len(FAMILIES) or g["n"].min() < min_n:
            continue
        d = {r["source_family"]: r for r in g.iter_rows(named=True)}
        du = d["news"]["u_hat"] - d["sec_filing"]["u_hat"]
        dp = d["news"]["planted"] - d["sec_filing"]["planted"]
        rows.append(
            {
                "event_type": c,
                "horizon": h,
                "n_news": d["news"]["n"],
                "n_sec": d["sec_filing"]["n"],
                "u_news": d["news"]["u_hat"],
                "u_sec": d["sec_filing"]["u_hat"],
                "planted_news": d["news"]["planted"],
                "planted_sec": d["sec_filing"]["planted"],
                "agree": bool(du * dp > 0),
            }
        )
    return pl.DataFrame(rows) if rows else pl.DataFrame(schema={"event_type": pl.Utf8, "horizon": pl.Utf8, "agree": pl.Boolean})


def fine_ordering(snapshot: pl.DataFrame, planted: pl.DataFrame, min_n: float = 100) -> pl.DataFrame:
    """Per (event type, horizon): the pairs of families (n >= min_n, different planted utility, see
    :func:`planted_for`) whose learned û order is their planted order; ``agree`` when every pair is."""
    j = snapshot.join(planted_for(snapshot, planted), on=["source_family", "event_type", "horizon"]).filter(pl.col("n") >= min_n)
    rows = []
    for (c, h), g in j.sort("source_family").group_by(["event_type", "horizon"], maintain_order=True):
        pairs = [(a, b) for a, b in itertools.combinations(g.iter_rows(named=True), 2) if a["planted"] != b["planted"]]
        if not pairs:
            continue
        good = [a for a, b in pairs if (a["u_hat"] - b["u_hat"]) * (a["planted"] - b["planted"]) > 0]
        rows.append(
            {
                "event_type": c,
                "horizon": h,
                "families": ",".join(g["source_family"].to_list()),
                "pairs": len(pairs),
                "pairs_in_order": len(good),
                "agree": len(good) == len(pairs),
            }
        )
    schema = {"event_type": pl.Utf8, "horizon": pl.Utf8, "families": pl.Utf8, "pairs": pl.Int64, "pairs_in_order": pl.Int64, "agree": pl.Boolean}
    return pl.DataFrame(rows, schema=schema).sort("event_type", "horizon")


def pairwise_concordance(snapshot: pl.DataFrame, planted: pl.DataFrame, min_n: float = 100) -> tuple[float, int]:
    """Share of cell pairs (n >= min_n) whose û order matches their planted order, and the pair count."""
    j = snapshot.join(planted_for(snapshot, planted), on=["source_family", "event_type", "horizon"]).filter(pl.col("n") >= min_n)
    good = total = 0
    for a, b in itertools.combinations(j.iter_rows(named=True), 2):
        if a["planted"] == b["planted"] or a["u_hat"] == b["u_hat"]:
            continue
        total += 1
        good += int((a["u_hat"] - b["u_hat"]) * (a["planted"] - b["planted"]) > 0)
    return (good / total if total else float("nan")), total


def useful_family(planted: pl.DataFrame) -> dict[str, str]:
    """Per event type, the family with the higher planted utility averaged over horizons
    (the context is shared across horizons, seed 000 §3.5). Seed 000's two families, which the
    contexts' ``source_family`` names, whatever finer rows the truth file also holds."""
    m = planted.filter(pl.col("source_family").is_in(list(FAMILIES))).group_by(["event_type", "source_family"]).agg(pl.col("planted").mean())
    out = {}
    for (c,), g in m.group_by(["event_type"]):
        out[c] = g.sort(["planted", "source_family"], descending=[True, False])["source_family"][0]
    return out


def useful_share_by_period(contexts: pl.DataFrame, anchors: pl.DataFrame, planted: pl.DataFrame, every: str = "1q") -> pl.DataFrame:
    """Share of context slots taken by the event type's useful family, per period (contexts with date)."""
    use = useful_family(planted)
    j = contexts.join(anchors.select("anchor_id", "event_type"), on="anchor_id")
    j = j.with_columns(pl.col("event_type").replace_strict(use, default=None).alias("useful"))
    j = j.with_columns((pl.col("source_family") == pl.col("useful")).alias("is_useful"))
    return j.sort("date").group_by_dynamic("date", every=every).agg(pl.col("is_useful").mean().alias("useful_share"), pl.len().alias("slots"))


def trend(values: list[float]) -> float:
    """Least-squares slope per period."""
    if len(values) < 2:
        return float("nan")
    x = np.arange(len(values), dtype=float)
    return float(np.polyfit(x, np.asarray(values, dtype=float), 1)[0])


def useful_share_gain(
    memory_ctx: pl.DataFrame, static_ctx: pl.DataFrame, anchors: pl.DataFrame, planted: pl.DataFrame, every: str = "1q"
) -> pl.DataFrame:
    """Per period: the useful family's share of context slots with the memory minus without it.

    Both variants share anchors and candidate pools, so the difference removes what moves both
    (the mix of event types and sources in each quarter); it starts near 0 at the memory reset and
    rises as the memory learns which family to trust."""
    m = useful_share_by_period(memory_ctx, anchors, planted, every).rename({"useful_share": "with_memory", "slots": "slots"})
    s = useful_share_by_period(static_ctx, anchors, planted, every).select("date", pl.col("useful_share").alias("without_memory"))
    return (
        m.join(s, on="date", how="full", coalesce=True)
        .sort("date")
        .with_columns((pl.col("with_memory") - pl.col("without_memory")).alias("gain"))
        .select("date", "with_memory", "without_memory", "gain", "slots")
    )


def changed_contexts(memory_ctx: pl.DataFrame, static_ctx: pl.DataFrame) -> tuple[int, int]:
    """(anchors whose top-M passage set differs with the memory, anchors in both)."""
    both = memory_ctx.select("anchor_id").unique().join(static_ctx.select("anchor_id").unique(), on="anchor_id")
    m = memory_ctx.select("anchor_id", "passage_id").join(both, on="anchor_id")
    s = static_ctx.select("anchor_id", "passage_id").join(both, on="anchor_id")
    differ = pl.concat([m.join(s, on=["anchor_id", "passage_id"], how="anti"), s.join(m, on=["anchor_id", "passage_id"], how="anti")])
    return differ["anchor_id"].n_unique(), both.height


def memory_terms(snapshot: pl.DataFrame, lam: float) -> pl.DataFrame:
    """Per (event type, family): λ·mean_h adj, the term eq. 6 adds to every passage of that family,
    and (seed 000's two families) the news-minus-SEC difference that decides whether the memory can
    swap them."""
    t = snapshot.group_by(["event_type", "source_family"]).agg((lam * pl.col("adjustment").mean()).alias("term"))
    w = t.sort("source_family").pivot(on="source_family", index="event_type", values="term").sort("event_type")
    if {"news", "sec_filing"} <= set(w.columns):
        w = w.with_columns((pl.col("news") - pl.col("sec_filing")).alias("news_minus_sec"))
    return w


def planted_memory(planted: pl.DataFrame, params: MemoryParams, n: float = 1e9) -> SourceMemory:
    """A memory that has already learned the planted utilities exactly (û = planted, η ≈ 1): the
    most any reader's feedback could teach it, i.e. the ceiling of what eq. 6 can do to contexts."""
    mem = SourceMemory(params)
    for r in planted.iter_rows(named=True):
        k = (r["source_family"], r["event_type"], r["horizon"])
        mem.a[k], mem.b[k] = r["planted"] * n, (1.0 - r["planted"]) * n
    return mem


def changed_order(memory_ctx: pl.DataFrame, static_ctx: pl.DataFrame) -> int:
    """Anchors whose top-M differs in set or in order (the reader weighs passages by place)."""
    cols = ["anchor_id", "passage_id", "position"]
    return pl.concat(
        [
            memory_ctx.select(cols).join(static_ctx.select(cols), on=cols, how="anti"),
            static_ctx.select(cols).join(memory_ctx.select(cols), on=cols, how="anti"),
        ]
    )["anchor_id"].n_unique()
