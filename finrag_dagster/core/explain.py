"""One anchor, end to end, read from the lake: what `finrag explain` and the report show.

For an anchor of decision day D and each variant: the candidate pool (BM25, cosine, static relevance
r, seed 000 §3.3), the memory term of seed 000 eq. 6 (final score r + λ·mean_h adj from the memory
snapshot used on D), the top-5 context the reader saw, its answer per horizon with the cited ids,
the matured labels (§3.4) and the memory updates the anchor caused once each horizon matured
(App. C's feedback lineage). Everything is read from the lake; the one thing the lake does not
store, the memory term of a passage that stayed outside the context, is computed with the loop's own
eq. 6 function (:func:`~.memory.source_memory.rerank`) from the stored snapshot, and checked against
the stored context.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import polars as pl

from . import families
from .loop import Variant, memory_keys, variants_of
from .memory.source_memory import MemoryParams, SourceMemory, rerank

if TYPE_CHECKING:
    from .calendar import TradingCalendar
    from .settings import Settings
    from .storage.lake import Lake

M = 5  # the reader's context size (seed 000: top-5)


class UnknownAnchor(LookupError):
    """No anchor with that id in the lake's anchors table."""


def find_anchor(lake: Lake, anchor_id: str) -> dict:
    """The anchor's row (seed 000 §3.2: ticker, event type, decision time) and its decision day, or :class:`UnknownAnchor`."""
    cols = ["anchor_id", "ticker", "event_type", "public_time", "decision_time", "session", "headline"]
    a = lake.read("anchors", columns=cols).filter(pl.col("anchor_id") == anchor_id) if lake.partition_files("anchors") else pl.DataFrame()
    if a.height == 0:
        raise UnknownAnchor(anchor_id)
    row = a.row(0, named=True)
    return {**row, "day": row["date"].isoformat(), "public_time": row["public_time"].isoformat(), "decision_time": row["decision_time"].isoformat()}


def all_variants(s: Settings) -> dict[str, Variant]:
    """Every variant the settings run, by its lake name (seed 000 §4.2-4.3, :mod:`.families`)."""
    return {v.name: v for f in s.variants.families for v in variants_of(f, s.memory.lam, s.variants.shuffle_seeds, tuple(s.lora.seeds))}


def pick_variants(s: Settings, lake: Lake, day: str, wanted: list[str] | None) -> list[Variant]:
    """The variants to show: those asked for (a family stands for its variants; "all"), else Table 2's rows; only those with outputs on ``day``."""
    known = all_variants(s)
    if not wanted:
        names = [n for n, v in known.items() if "main" in families.family(v.family).rows]
    elif wanted == ["all"]:
        names = list(known)
    else:
        names = [n for w in wanted for n, v in known.items() if w in (n, v.family)]
        unknown = [w for w in wanted if not any(w in (n, v.family) for n, v in known.items())]
        if unknown:
            raise ValueError(f"unknown variant {', '.join(unknown)}; the settings run {', '.join(known)}")
    return [known[n] for n in dict.fromkeys(names) if lake.exists("reader_outputs", variant=n, date=day)]


def day_params(s: Settings, lake: Lake, day: str) -> MemoryParams:
    """(κ, δ, λ) of the memory on ``day``: Table 6's selection on the test split (memory.test_params), else settings.memory."""
    from .evaluation.changes import split_lambda_delta

    a, b = s.splits.test
    split = "test" if a.isoformat() <= day <= b.isoformat() else "other"
    lam, delta = split_lambda_delta(s, lake, split)
    return MemoryParams(kappa=s.memory.kappa, delta=delta, lam=lam)


def scored_pool(pool: pl.DataFrame, anchor: dict, v: Variant, snapshot: pl.DataFrame | None, params: MemoryParams, family_of=None) -> pl.DataFrame:
    """Every pool passage with its memory term, final score and position by seed 000 eq. 6 (the loop's ``rerank`` over the whole pool)."""
    keys = memory_keys(pl.DataFrame({"anchor_id": [anchor["anchor_id"]], "event_type": [anchor["event_type"]]}), v)
    mem = None
    if v.uses_memory and snapshot is not None and snapshot.height:
        fams = family_of.families if family_of is not None else tuple(dict.fromkeys(snapshot["source_family"].to_list()))
        mem = SourceMemory.from_frame(snapshot.select("source_family", "event_type", "horizon", "a", "b", "updates"), params, fams)
    lam = params.lam if v.uses_memory else 0.0
    ranked = rerank(pool, keys, mem, lam, max(pool.height, 1), family_of)
    return ranked.select("passage_id", "memory_adj", "final_score", "position").with_columns(pl.lit(keys[anchor["anchor_id"]]).alias("memory_key"))


def released_on(cal: TradingCalendar, s: Settings, day: str, maturity: dt.date | None) -> str | None:
    """The decision day whose memory snapshot first holds a feedback row: the session after its maturity, inside the anchor's split (App. C; memory reset at each split start)."""
    if maturity is None:
        return None
    nxt = cal.offset(maturity.isoformat(), 1)
    for a, b in s.splits.ranges().values():
        if a.isoformat() <= day <= b.isoformat():
            return nxt.isoformat() if nxt <= b else None
    return None


def lineage(lake: Lake, cal: TradingCalendar, s: Settings, anchor: dict, v: Variant) -> list[dict]:
    """The memory updates the anchor caused in ``v`` (its feedback rows: horizon, credited families, weight) with the day each was released."""
    if not families.family(v.family).memory or not lake.exists("feedback", variant=v.name, date=anchor["day"]):
        return []
    fb = lake.read("feedback", dates=[anchor["day"]], variant=v.name).filter(pl.col("anchor_id") == anchor["anchor_id"]).sort("horizon")
    out = []
    for r in fb.iter_rows(named=True):
        rel = released_on(cal, s, anchor["day"], r["maturity_day"]) if r["applied"] else None
        out.append(
            {
                "horizon": r["horizon"],
                "maturity_day": r["maturity_day"].isoformat(),
                "released_on": rel,
                "prediction": r["prediction"],
                "label": r["label"],
                "correct": r["correct"],
                "families": list(r["families"]),
                "weight": r["weight"],
                "applied": r["applied"],
                "outcome": r["outcome"],
            }
        )
    return out


def passages(lake: Lake, ids: list[str]) -> dict[str, dict]:
    """Public time (UTC), title, form and item of the passages ``ids``, from the evidence table."""
    if not ids:
        return {}
    con = lake.duckdb(tables=["evidence"])
    try:
        q = "SELECT passage_id, public_time, title, form_type, item FROM evidence WHERE passage_id IN (SELECT unnest($ids))"
        rows = con.execute(q, {"ids": sorted(set(ids))}).fetchall()
    finally:
        con.close()
    return {r[0]: {"public_time": r[1].isoformat(), "title": r[2], "form_type": r[3], "item": r[4]} for r in rows}


def answers(out: pl.DataFrame, context_ids: list[str]) -> list[dict]:
    """The reader's answer per horizon (seed 000 §3.4's JSON): signal, the ids it cited, the passage each one names in the context (None: not in it), reason."""
    rows = []
    for r in out.sort("horizon").iter_rows(named=True):
        named = dict(zip(r["valid_ids"], r["valid_passages"]))
        cited = [named.get(c) for c in r["cited_ids"]]
        rows.append(
            {
                "horizon": r["horizon"],
                "signal": r["signal"],
                "cited_ids": list(r["cited_ids"]),
                "cited_passages": cited,
                "cited_in_context": [p is not None and p in context_ids for p in cited],
                "reason": r["reason"],
            }
        )
    return rows


def variant_view(lake: Lake, s: Settings, cal: TradingCalendar, anchor: dict, v: Variant, pool: pl.DataFrame) -> dict:
    """One variant's pool scored by seed 000 eq. 6, the context it stored, the reader's answers and the anchor's memory lineage."""
    day, aid = anchor["day"], anchor["anchor_id"]
    params = day_params(s, lake, day)
    snap = (
        lake.read("memory_snapshot", dates=[day], variant=v.name)
        if v.uses_memory and lake.exists("memory_snapshot", variant=v.name, date=day)
        else None
    )
    fam_map = None
    if s.memory.families != "seed000":
        from .loop_io import family_map, map_passages

        fam_map = map_passages(family_map(s), lake, pool["passage_id"].to_list())
    scored = scored_pool(pool, anchor, v, snap, params, fam_map)
    ctx = lake.read("contexts", dates=[day], variant=v.name).filter(pl.col("anchor_id") == aid).sort("position")
    stored = ctx["passage_id"].to_list()
    recomputed = scored.filter(pl.col("position") <= len(stored)).sort("position")["passage_id"].to_list()
    kept = {p: (a, f) for p, a, f in zip(stored, ctx["memory_adj"].to_list(), ctx["final_score"].to_list())}
    rows = []
    for r in pool.join(scored, on="passage_id").sort("position").iter_rows(named=True):
        in_ctx = r["passage_id"] in kept
        adj, final = kept[r["passage_id"]] if in_ctx else (r["memory_adj"], r["final_score"])
        src = "stored" if in_ctx else ("eq. 6 from the snapshot" if v.uses_memory else "no memory")
        rows.append({**{k: r[k] for k in POOL_COLUMNS}, "memory_adj": adj, "final_score": final, "adj_source": src, "in_context": in_ctx})
    out = lake.read("reader_outputs", dates=[day], variant=v.name).filter(pl.col("anchor_id") == aid)
    return {
        "variant": v.name,
        "family": v.family,
        "memory": v.uses_memory,
        "lambda": params.lam if v.uses_memory else 0.0,
        "delta": params.delta if v.uses_memory else None,
        "memory_key": scored["memory_key"][0] if scored.height else anchor["event_type"],
        "snapshot_cells_learned": int(snap.filter(pl.col("n") > 0).height) if snap is not None else None,
        "pool": rows,
        "context": stored,
        "context_recomputed_agrees": recomputed == stored,
        "answers": answers(out, stored),
        "feedback": lineage(lake, cal, s, anchor, v),
    }


POOL_COLUMNS = ("passage_id", "rank", "source_family", "is_peer", "public_time", "bm25", "dense", "relevance")


def explain_anchor(s: Settings, lake: Lake, cal: TradingCalendar, anchor_id: str, wanted: list[str] | None = None) -> dict:
    """Everything the lake knows about one anchor: its decision, each variant's view (:func:`variant_view`) and its matured labels (seed 000 §3.3-3.5)."""
    anchor = find_anchor(lake, anchor_id)
    day = anchor["day"]
    pool = lake.read("candidates", dates=[day]).filter(pl.col("anchor_id") == anchor_id).drop("date", strict=False)
    ev = passages(lake, pool["passage_id"].to_list())
    pool = pool.with_columns(pl.Series("public_time", [ev.get(p, {}).get("public_time") for p in pool["passage_id"].to_list()], dtype=pl.Utf8))
    lab = lake.read("labels", dates=[day]).filter(pl.col("ticker") == anchor["ticker"]).sort("horizon")
    labels = [
        {"horizon": r["horizon"], "status": r["status"], "maturity_day": r["maturity_day"].isoformat(), "y": r["y"], "z": r["z"]}
        for r in lab.iter_rows(named=True)
    ]
    views = [variant_view(lake, s, cal, anchor, v, pool) for v in pick_variants(s, lake, day, wanted)]
    anchor = {k: (v.isoformat() if isinstance(v, dt.date) else v) for k, v in anchor.items() if k != "date"}
    titles = {p: e["title"] for p, e in ev.items()}
    return {"anchor": anchor, "labels": labels, "variants": views, "titles": titles}


def disagreeing(per: pl.DataFrame, k: int = 3) -> list[tuple[str, str, str]]:
    """Up to ``k`` (anchor, variant, twin) where a memory variant and its twin disagree: changed answers first, Table 2's rows first (seed 000 eq. 6's effect)."""
    if per.height == 0:
        return []
    main = [n for n in families.rows_of("main") if families.family(n).memory]  # Table 2's memory rows before the validity checks
    c = per.filter(pl.col("context_changed") | pl.col("answer_changed")).with_columns(pl.col("variant").is_in(main).alias("main"))
    c = c.sort(["answer_changed", "main", "anchor_id", "variant"], descending=[True, True, False, False])
    out, seen = [], set()
    for a, v, t in zip(c["anchor_id"].to_list(), c["variant"].to_list(), c["twin"].to_list()):
        if a not in seen:
            seen.add(a)
            out.append((a, v, t))
    return out[:k]


def _sign(x) -> str:
    return "-" if x is None else f"{x:+d}" if x else "0"


def anchor_table(res: dict) -> dict:
    """:func:`explain_anchor`'s result as one report table: the pool with each variant's memory term, final score and position (seed 000 eq. 6), answers and labels in a note."""
    a, views = res["anchor"], res["variants"]
    cells = {v["variant"]: {r["passage_id"]: r for r in v["pool"]} for v in views}
    pos = {v["variant"]: {r["passage_id"]: i + 1 for i, r in enumerate(v["pool"])} for v in views}
    rows = []
    for r in sorted(views[0]["pool"], key=lambda r: r["rank"]) if views else []:
        per = []
        for v in views:
            x = cells[v["variant"]][r["passage_id"]]
            per.append(f"{x['memory_adj']:+.3f} → {x['final_score']:.3f} #{pos[v['variant']][r['passage_id']]}{'*' if x['in_context'] else ''}")
        fam = r["source_family"] + (" (peer)" if r["is_peer"] else "")
        rows.append(
            [r["rank"], r["passage_id"], fam, (r["public_time"] or "")[:16], f"{r['bm25']:.2f}", f"{r['dense']:.3f}", f"{r['relevance']:.3f}", *per]
        )
    says = "; ".join(f"{v['variant']}: " + " ".join(f"{x['horizon']} {_sign(x['signal'])}" for x in v["answers"]) for v in views)
    labels = " ".join(f"{x['horizon']} {_sign(x['y'])}" for x in res["labels"] if x["y"] is not None) or "not matured"
    return {
        "title": f"Anchor {a['anchor_id']} ({a['ticker']}, {a['event_type']}, decision day {a['day']}): {a['headline']}",
        "columns": ["rank", "passage", "family", "public (UTC)", "BM25", "cosine", "r", *[v["variant"] for v in views]],
        "rows": rows,
        "note": (
            "Per variant: memory adj → final score (seed 000 eq. 6) #position, * = in the reader's top-5 context. "
            f"Answers: {says}. Labels: {labels}. `finrag explain {a['anchor_id']}` shows the citations and the memory updates."
        ),
    }


__all__ = ["anchor_table", "disagreeing", "explain_anchor", "UnknownAnchor", "find_anchor", "lineage", "pick_variants", "released_on", "scored_pool"]
