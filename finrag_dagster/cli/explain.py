"""`finrag explain`: one anchor end to end, every variant side by side (seed 000 eq. 6 per passage),
and the anchors whose context or answer the memory changed (``--changed``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from .options import day, lake_to_read, settings_for

console = Console()


def explain(
    anchor_id: Annotated[Optional[str], typer.Argument(help="an anchor id (news event) of the lake")] = None,
    variants: Annotated[
        Optional[list[str]],
        typer.Option("--variants", help="variants or families to show (repeat or comma-separate; 'all'); default: Table 2's rows"),
    ] = None,
    changed: Annotated[bool, typer.Option("--changed", help="list the anchors whose context or answer the memory changed (on --split)")] = False,
    split: Annotated[str, typer.Option("--split", help="the split --changed compares on: test | validation")] = "test",
    day_: Annotated[Optional[str], typer.Option("--day", help="list the anchors of this decision day (YYYY-MM-DD)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of tables")] = False,
    config: Annotated[Optional[Path], typer.Option(help="settings TOML")] = None,
    lake: Annotated[Optional[str], typer.Option(help="lake folder, or an object-store URI (s3://bucket/prefix)")] = None,
):
    """One anchor end to end: its pool with BM25, cosine, relevance and the memory term (seed 000 eq. 6) per variant, the context, the answers, the labels and the memory updates it caused."""
    import json

    from ..core.calendar import nyse
    from ..core.tables import open_lake

    s = settings_for(config, lake)
    lake_to_read(s)
    lk, cal = open_lake(s), nyse()
    wanted = [w.strip() for v in variants or [] for w in v.split(",") if w.strip()] or None
    if changed or day_:
        res = _changed_anchors(s, lk, cal, wanted, split) if changed else _day_anchors(lk, day(day_, "--day"))
        if as_json:
            print(json.dumps(res, indent=2, default=str))
        else:
            _print_anchor_list(res)
        return
    if not anchor_id:
        raise typer.BadParameter("give an anchor id, --changed or --day YYYY-MM-DD")
    from ..core.explain import UnknownAnchor, explain_anchor

    try:
        res = explain_anchor(s, lk, cal, anchor_id, wanted)
    except UnknownAnchor:
        console.print(
            f"no anchor {anchor_id!r} in the lake {s.lake_uri or s.lake_dir}: list a day's anchors with `finrag explain --day YYYY-MM-DD`, "
            "or those the memory changed with `finrag explain --changed`",
            markup=False,
            highlight=False,
        )
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps(res, indent=2, default=str))
        return
    _print_explain(res)


def _changed_anchors(s, lk, cal, wanted: list[str] | None, split: str = "test") -> dict:
    """The anchors of ``split`` whose context or answer a memory variant changed against its twin (the counts under Table 2)."""
    import polars as pl

    from ..core.evaluation.changes import change_sentence, family_rows, memory_changes

    if split not in ("test", "validation"):
        raise typer.BadParameter(f"--split {split!r}: test or validation")
    summary, per, _ = memory_changes(s, lk, cal, split)
    if wanted and per.height:
        summary = summary.filter(pl.col("variant").is_in(wanted) | pl.col("family").is_in(wanted))
        per = per.filter(pl.col("variant").is_in(summary["variant"].to_list()))
    rows = per.filter(pl.col("context_changed") | pl.col("answer_changed")) if per.height else per
    info = _day_anchors(lk, None, rows["anchor_id"].unique().to_list()) if rows.height else {"anchors": []}
    by_id = {a["anchor_id"]: a for a in info["anchors"]}
    listed = [{**by_id.get(r["anchor_id"], {"anchor_id": r["anchor_id"]}), **r} for r in rows.sort("anchor_id", "variant").iter_rows(named=True)]
    listed.sort(key=lambda r: (str(r.get("day")), r["anchor_id"], r["variant"]))
    return {"title": f"anchors the memory changed ({split} split)", "counts": [change_sentence(r) for r in family_rows(summary)], "anchors": listed}


def _day_anchors(lk, d, ids: list[str] | None = None) -> dict:
    """The anchors of decision day ``d`` (or those of ``ids``): id, ticker, event type, headline."""
    import polars as pl

    cols = ["anchor_id", "ticker", "event_type", "headline"]
    a = lk.read("anchors", dates=[d.isoformat()] if d else None, columns=cols)
    if ids is not None and a.height:
        a = a.filter(pl.col("anchor_id").is_in(ids))
    a = a.with_columns(pl.col("date").cast(pl.Utf8).alias("day")).drop("date") if a.height else a
    return {"title": f"anchors of {d}" if d else "anchors", "counts": [], "anchors": a.to_dicts()}


def _print_anchor_list(res: dict) -> None:
    """The anchors of --changed or --day, one markdown row each (the style of the printed Tables 2 and 4)."""
    from ..core.formatting import md_table

    for line in res["counts"]:
        console.print(line, markup=False, highlight=False)
    console.print(f"[bold]{res['title']}[/bold]: {len(res['anchors'])}")
    changed = bool(res["anchors"]) and "variant" in res["anchors"][0]
    cols = ["day", "anchor", "ticker", "event type", *(("variant", "changed") if changed else ()), "headline"]
    rows = []
    for a in res["anchors"]:
        what = "+".join(k for k in ("context", "answer") if a.get(f"{k}_changed"))
        rows.append(
            [
                a.get("day", ""),
                a["anchor_id"],
                a.get("ticker", ""),
                a.get("event_type", ""),
                *((a["variant"], what) if changed else ()),
                a.get("headline") or "",
            ]
        )
    if rows:
        console.print(md_table(cols, rows), markup=False, highlight=False, soft_wrap=True)


def _print_explain(res: dict) -> None:
    """`finrag explain ANCHOR` as tables: the anchor, its labels, the pool across variants, then each variant's context, answers and lineage."""
    a = res["anchor"]
    console.print(f"[bold]anchor {a['anchor_id']}[/bold]  {a['ticker']}  {a['event_type']}  (session {a['session']})", highlight=False)
    console.print(
        f"public {_ny_time(a['public_time'])} NY; decided with what was public before {_ny_time(a['decision_time'])} NY, decision day {a['day']}",
        highlight=False,
    )
    console.print(f"  {a['headline']}", markup=False, highlight=False)
    console.print(
        "labels: "
        + "; ".join(
            f"{x['horizon']} {x['status']}" + (f" y={_sign(x['y'])} z={x['z']:.2f}" if x["y"] is not None else "") + f" (close {x['maturity_day']})"
            for x in res["labels"]
        ),
        highlight=False,
    )
    views = res["variants"]
    if not views:
        console.print("no variant has reader outputs for this anchor")
        return
    t = Table(title="candidate pool (static rank) and seed 000 eq. 6 per variant: memory adj → final score #position (* = in the context)")
    for c in ("rank", "passage", "family", "public (NY)", "BM25", "cosine", "r", *[v["variant"] for v in views]):
        t.add_column(c)
    cells = {v["variant"]: {r["passage_id"]: r for r in v["pool"]} for v in views}
    for r in sorted(views[0]["pool"], key=lambda r: r["rank"]):
        per = []
        for v in views:
            x = cells[v["variant"]][r["passage_id"]]
            pos = next(i + 1 for i, y in enumerate(v["pool"]) if y["passage_id"] == r["passage_id"])
            per.append(f"{x['memory_adj']:+.3f} → {x['final_score']:.3f} #{pos}{'*' if x['in_context'] else ''}")
        pub = _ny_time(r["public_time"]) if r["public_time"] else "?"
        t.add_row(
            str(r["rank"]),
            r["passage_id"],
            r["source_family"] + (" (peer)" if r["is_peer"] else ""),
            pub,
            f"{r['bm25']:.2f}",
            f"{r['dense']:.3f}",
            f"{r['relevance']:.3f}",
            *per,
        )
    console.print(t)
    console.print(
        "The lake stores the memory term of the five context passages; for the others it is computed here with the loop's own eq. 6 "
        "function from the memory snapshot stored for the decision day.",
        highlight=False,
    )
    for v in views:
        _print_variant(v, res["labels"], res["titles"])


def _print_variant(v: dict, labels: list[dict], titles: dict) -> None:
    y = {x["horizon"]: x["y"] for x in labels}
    mem = (
        f"λ={v['lambda']:.2f}, δ={v['delta']:.2f}, memory key {v['memory_key']!r}, {v['snapshot_cells_learned']} cells learned in the day's snapshot"
        if v["memory"]
        else "no memory"
    )
    console.print(f"\n[bold]{v['variant']}[/bold] ({mem})", highlight=False)
    agree = "agrees with" if v["context_recomputed_agrees"] else "DIFFERS from"
    console.print(f"context ({len(v['context'])}; eq. 6 recomputed from the stored snapshot {agree} the stored context):", highlight=False)
    for i, p in enumerate(v["context"], 1):
        console.print(f"  {i}. {p}  {titles.get(p, '')[:90]}", markup=False, highlight=False)
    t = Table(title="answers")
    for c in ("horizon", "signal", "label y", "cited", "in context", "reason"):
        t.add_column(c)
    for x in v["answers"]:
        cited = ", ".join(f"{c} = {p}" if p else c for c, p in zip(x["cited_ids"], x["cited_passages"])) or "-"
        inside = ", ".join("yes" if b else "NO" for b in x["cited_in_context"]) or "-"
        t.add_row(x["horizon"], _sign(x["signal"]), _sign(y.get(x["horizon"])), cited, inside, x["reason"])
    console.print(t)
    if v["memory"]:
        t = Table(title="memory updates this anchor caused (feedback lineage)")
        for c in ("horizon", "matured (close)", "in the snapshot of", "prediction", "label", "correct", "credited families", "weight", "outcome"):
            t.add_column(c)
        for f in v["feedback"]:
            t.add_row(
                f["horizon"],
                f["maturity_day"],
                f["released_on"] or "never (no update or the split ended)",
                _sign(f["prediction"]),
                _sign(f["label"]),
                str(f["correct"]),
                ", ".join(f["families"]) or "-",
                f"{f['weight']:.3f}",
                f["outcome"],
            )
        console.print(t if v["feedback"] else "memory updates: none recorded yet (horizons not matured, or feedback not materialised)")


def _sign(x) -> str:
    """A signal or label as +1 / 0 / -1 ("-" when there is none)."""
    return "-" if x is None else f"{x:+d}" if x else "0"


def _ny_time(ts: str) -> str:
    """A UTC ISO time as New York 'YYYY-MM-DD HH:MM'."""
    import pandas as pd

    return pd.Timestamp(ts).tz_convert("America/New_York").strftime("%Y-%m-%d %H:%M")
