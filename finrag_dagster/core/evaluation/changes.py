"""What a source memory changed: contexts, answers and metrics against its no-memory twin.

Seed 000 Table 2 sets "Frozen + Source Memory" beside "Frozen + No Memory"; when the rows agree, the
question is whether the memory did anything at all. Each memory variant is compared, anchor by anchor
on the same split, with its **twin** (the family that differs only by the memory being off): the
top-5 sets and answers that changed, Table 2's metrics on the changed anchors, and the share of
pools eq. 6 could change at all (:mod:`.reach`). Nothing is written to the lake. The twins and
the counts: docs/evaluation.md, "What the memory changed".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from .. import families
from ..loop import variants_of
from .metrics import event_metrics, rank_ic
from .reach import pool_reach, reach_summary

if TYPE_CHECKING:
    from ..calendar import TradingCalendar
    from ..settings import Settings
    from ..storage.lake import Lake

TABLE2_METRICS = ("Non-neutral F1", "Macro-F1", "1D Macro-F1", "3D Macro-F1", "5D Macro-F1", "Rank IC")


def twin_family(name: str) -> str | None:
    """The no-memory family a memory family is compared with: the same reader, prompt and LoRA, no memory (seed 000 Table 2's pairs)."""
    f = families.family(name)
    if not f.memory:
        return None
    for g in families.FAMILIES:
        if not g.memory and g.shuffle is None and g.toe == f.toe and g.lora == f.lora:
            return g.name
    return None


def variant_pairs(fams: tuple[str, ...] | list[str], n_seeds: int, lora_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)) -> list[tuple[str, str, str]]:
    """(family, variant, twin variant) for every variant of a memory family whose twin family is run too (seed 000 §4.2-4.3)."""
    out = []
    for f in fams:
        t = twin_family(f)
        if t is None or t not in fams:
            continue
        twins = [v.name for v in variants_of(t, 0.0, n_seeds, lora_seeds)]
        for k, v in enumerate(variants_of(f, 0.0, n_seeds, lora_seeds)):
            out.append((f, v.name, twins[k] if families.family(f).lora else twins[0]))
    return out


def _top_sets(ctx: pl.DataFrame, m: int) -> dict[str, frozenset]:
    c = ctx.filter(pl.col("position") <= m)
    out: dict[str, set] = {}
    for a, p in zip(c["anchor_id"].to_list(), c["passage_id"].to_list()):
        out.setdefault(a, set()).add(p)
    return {a: frozenset(s) for a, s in out.items()}


def _signals(out: pl.DataFrame) -> dict[str, tuple]:
    g = out.sort("anchor_id", "horizon").group_by("anchor_id", maintain_order=True).agg(pl.col("horizon"), pl.col("signal"))
    return {a: tuple(zip(h, s)) for a, h, s in zip(g["anchor_id"].to_list(), g["horizon"].to_list(), g["signal"].to_list())}


def anchor_changes(ctx_v: pl.DataFrame, ctx_t: pl.DataFrame, out_v: pl.DataFrame, out_t: pl.DataFrame, m: int = 5) -> pl.DataFrame:
    """Per anchor answered in both runs: whether its top-m context set differs (seed 000 eq. 6's rerank) and whether any horizon's signal differs."""
    sv, st = _signals(out_v), _signals(out_t)
    cv, ct = _top_sets(ctx_v, m), _top_sets(ctx_t, m)
    ids = sorted(set(sv) & set(st))
    empty = frozenset()
    return pl.DataFrame(
        {
            "anchor_id": ids,
            "context_changed": [cv.get(a, empty) != ct.get(a, empty) for a in ids],
            "answer_changed": [sv[a] != st[a] for a in ids],
        },
        schema={"anchor_id": pl.Utf8, "context_changed": pl.Boolean, "answer_changed": pl.Boolean},
    )


def subset_metrics(out: pl.DataFrame, labels: pl.DataFrame, stock_day: pl.DataFrame, anchors: list[str]) -> dict:
    """Table 2's metrics (seed 000 §4.2) on ``anchors`` only: event metrics on their matured labels; Rank IC on the stock-days they belong to."""
    o = out.filter(pl.col("anchor_id").is_in(anchors)).select("anchor_id", "date", "ticker", "horizon", "signal")
    lab = labels.filter(pl.col("status") == "ok").select("date", "ticker", "horizon", "y", "z")
    m = event_metrics(o.join(lab, on=["date", "ticker", "horizon"]))
    days = o.select("date", "ticker").unique()
    if stock_day.height == 0:
        return {**m, "Rank IC": math.nan}
    sd = stock_day.join(days, on=["date", "ticker"]).join(lab.select("date", "ticker", "horizon", "z"), on=["date", "ticker", "horizon"])
    m["Rank IC"] = rank_ic(sd.select("date", "ticker", "horizon", "signal", "z")) if sd.height else math.nan
    return m


@dataclass(frozen=True)
class SplitInputs:
    """What the comparison reads of one split: the days, labels, stock-day signals and candidate pools."""

    days: list[str]
    labels: pl.DataFrame
    stock_day: pl.DataFrame
    reach: dict


def split_inputs(s: Settings, lake: Lake, cal: TradingCalendar, split: str) -> SplitInputs | None:
    """Read a split's labels, stock-day signals and pools; the pools' reach at the (λ, δ) the split ran with (seed 000 eq. 6)."""
    from ..splits import split_days

    days = split_days(s, cal, lake, split)
    if not days:
        return None
    lab = lake.read("labels", dates=days, columns=["ticker", "horizon", "status", "y", "z"])
    sd = lake.read("stock_day_signals", dates=days) if lake.has_table("stock_day_signals") else pl.DataFrame()
    sd = sd.select("date", "ticker", "horizon", "variant", "signal") if sd.height else sd
    lam, delta = split_lambda_delta(s, lake, split)
    cand = lake.read("candidates", dates=days, columns=["anchor_id", "rank", "relevance", "source_family"])
    reach = {**reach_summary(pool_reach(cand, lam, delta)), "lambda": lam, "delta": delta}
    return SplitInputs(days, lab, sd, reach)


def split_lambda_delta(s: Settings, lake: Lake, split: str) -> tuple[float, float]:
    """The (λ, δ) a split's memory ran with: Table 6's selection on the test split (memory.test_params = selected), else settings.memory."""
    if split == "test" and s.memory.test_params == "selected" and lake.partition_files("sensitivity"):
        sel = lake.read("sensitivity").filter(pl.col("row") == "selected")
        vals = dict(zip(sel["metric"].to_list(), sel["value"].to_list()))
        if "lambda" in vals and "delta" in vals:
            return float(vals["lambda"]), float(vals["delta"])
    return float(s.memory.lam), float(s.memory.delta)


def compare_variant(lake: Lake, inp: SplitInputs, variant: str, twin: str) -> tuple[pl.DataFrame, dict] | None:
    """(per-anchor changes, one summary row) of ``variant`` against ``twin`` on a split (seed 000 Table 2's rows, anchor by anchor)."""
    cols_o = ["anchor_id", "ticker", "horizon", "signal"]
    out_v = lake.read("reader_outputs", dates=inp.days, variant=variant, columns=cols_o)
    out_t = lake.read("reader_outputs", dates=inp.days, variant=twin, columns=cols_o)
    if out_v.height == 0 or out_t.height == 0:
        return None
    cols_c = ["anchor_id", "passage_id", "position"]
    ctx_v = lake.read("contexts", dates=inp.days, variant=variant, columns=cols_c)
    ctx_t = lake.read("contexts", dates=inp.days, variant=twin, columns=cols_c)
    ch = anchor_changes(ctx_v, ctx_t, out_v, out_t)
    changed = ch.filter(pl.col("context_changed") | pl.col("answer_changed"))["anchor_id"].to_list()
    row = {
        "variant": variant,
        "twin": twin,
        "anchors": ch.height,
        "contexts_changed": int(ch["context_changed"].sum()),
        "answers_changed": int(ch["answer_changed"].sum()),
        "changed": len(changed),
    }
    for name, out in (("variant", out_v), ("twin", out_t)):
        sd = inp.stock_day.filter(pl.col("variant") == (variant if name == "variant" else twin)) if inp.stock_day.height else inp.stock_day
        m = subset_metrics(out, inp.labels, sd, changed) if changed else {"n": 0}
        row["n_matured"] = int(m["n"])
        row.update({f"{k} [{name}]": m.get(k, math.nan) for k in TABLE2_METRICS})
    return ch.with_columns(pl.lit(variant).alias("variant"), pl.lit(twin).alias("twin")), row


def memory_changes(s: Settings, lake: Lake, cal: TradingCalendar, split: str = "test") -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """(summary per memory variant, per-anchor changes, the pools' reach) on ``split``: what the memory changed against each twin."""
    inp = split_inputs(s, lake, cal, split)
    if inp is None:
        return pl.DataFrame(), pl.DataFrame(), {}
    rows, per = [], []
    for fam, v, t in variant_pairs(tuple(s.variants.families), s.variants.shuffle_seeds, tuple(s.lora.seeds)):
        res = compare_variant(lake, inp, v, t)
        if res is None:
            continue
        per.append(res[0])
        rows.append({"family": fam, **res[1]})
    summary = pl.DataFrame(rows) if rows else pl.DataFrame()
    if summary.height:
        summary = summary.with_columns(pl.lit(inp.reach.get("reachable_share", math.nan)).alias("reach_share"))
    return summary, (pl.concat(per) if per else pl.DataFrame()), inp.reach


# ------------------------------------------------------------------ how it is shown
CHANGE_COLUMNS = ["compared with", "contexts changed", "answers changed", "matured labels of changed", *TABLE2_METRICS]


def _span(xs: list[int]) -> str:
    lo, hi = min(xs), max(xs)
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


def family_rows(summary: pl.DataFrame) -> list[dict]:
    """One row per memory family (seeds pooled: counts as min–max, metrics as means), in the settings' order (seed 000 Tables 2-3 rows)."""
    from .tables import nanmean

    out = []
    for fam in dict.fromkeys(summary["family"].to_list()) if summary.height else []:
        g = summary.filter(pl.col("family") == fam)
        row = {
            "family": fam,
            "label": families.LABELS.get(fam, fam),
            "twin": families.LABELS.get(twin_family(fam) or "", ""),
            "seeds": g.height,
            "anchors": int(g["anchors"].max()),
            "contexts": _span(g["contexts_changed"].to_list()),
            "answers": _span(g["answers_changed"].to_list()),
            "n_matured": _span(g["n_matured"].to_list()),
            "answers_max": int(g["answers_changed"].max()),
        }
        for k in TABLE2_METRICS:
            row[k] = (nanmean(g[f"{k} [variant]"].to_list()), nanmean(g[f"{k} [twin]"].to_list()))
        out.append(row)
    return out


def change_sentence(r: dict) -> str:
    """ "15 of 1,344 contexts changed, 0 answers": one family's row of :func:`family_rows` in words (seed 000 eq. 6's effect)."""
    seeds = f" (range over {r['seeds']} seeds)" if r["seeds"] > 1 else ""
    answers = "answer" if r["answers"] == "1" else "answers"
    return f"{r['label']}: {r['contexts']} of {r['anchors']:,} contexts changed, {r['answers']} {answers}{seeds}, against {r['twin']}"


def change_cells(rows: list[dict]) -> list[list[str]]:
    """Table cells of :func:`family_rows`: counts, then each Table 2 metric on the changed anchors as "memory / twin"."""
    from ..formatting import fmt

    cells = []
    for r in rows:
        m = [f"{fmt(v)} / {fmt(t)}" if r["n_matured"] != "0" else "–" for v, t in (r[k] for k in TABLE2_METRICS)]
        cells.append([r["label"], r["twin"], f"{r['contexts']} of {r['anchors']:,}", r["answers"], r["n_matured"], *m])
    return cells


def reach_sentence(reach: dict) -> str:
    """Why the counts are small: the share of the split's pools seed 000 eq. 6 could reorder at all (:mod:`.reach`)."""
    if not reach.get("pools"):
        return ""
    if reach["lambda"] == 0:
        return (
            f"The memory ran with λ = 0 on this split (Table 6's selection on the validation split, memory.test_params = selected): "
            f"eq. 6 adds nothing to the static relevance, so none of the {reach['pools']:,} pools could change."
        )
    return (
        f"Reach: with the most favourable memory, eq. 6 (final score r + λ·mean adj, |adj| ≤ δ) could change the top 5 of "
        f"{reach['reachable_share']:.1%} of the split's {reach['pools']:,} pools at λ = {reach['lambda']:.2f}, δ = {reach['delta']:.2f} "
        f"({reach['mixed_share']:.1%} hold passages of two families; a passage moves by at most λδ = {reach['lambda'] * reach['delta']:.3f})."
    )


def changes_md(summary: pl.DataFrame, reach: dict) -> str:
    """What the memory changed, as markdown: the table of :func:`change_cells` and the reach sentence."""
    from ..formatting import md_table

    rows = family_rows(summary)
    if not rows:
        return "no memory variant with its no-memory twin in this split"
    return md_table(["", *CHANGE_COLUMNS], change_cells(rows)) + "\n\n" + reach_sentence(reach)


__all__ = [
    "change_sentence",
    "changes_md",
    "family_rows",
    "reach_sentence",
    "anchor_changes",
    "compare_variant",
    "memory_changes",
    "subset_metrics",
    "twin_family",
    "variant_pairs",
]
