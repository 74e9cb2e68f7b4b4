"""Does the source memory learn the planted source utilities? (issue 5's oracle, embedded reader)

    .venv/bin/finrag demo --config configs/oracle.toml --start 2019-01-02 --end 2021-12-31
    .venv/bin/python benchmarks/oracle.py --config configs/oracle.toml

Reads the lake built from the synthetic world and its planted truth. Reports, for the last
source_memory snapshot of the evaluated split: per (event type, horizon) whether the family with
the higher learned û is the family with the higher planted utility (cells where both families
have n >= 100), the pairwise concordance of û with the planted utility over all cells with
n >= 100, and the quarterly share of context slots that the event type's useful family takes in
source_memory versus no_memory, and their difference (the memory's own effect: both variants share
anchors and pools, so the quarter's mix of event types cancels).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_dagster.core.evaluation.oracle import (  # noqa: E402
    changed_contexts,
    family_ordering,
    planted_for,
    memory_terms,
    pairwise_concordance,
    planted_table,
    trend,
    useful_family,
    useful_share_by_period,
    useful_share_gain,
)
from finrag_dagster.core.tables import Lake  # noqa: E402
from finrag_dagster.core.settings import load_settings  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="configs/oracle.toml")
    ap.add_argument("--min-n", type=float, default=100)
    args = ap.parse_args()
    s = load_settings(args.config)
    lake = Lake(s.lake_dir)
    planted = planted_table(pl.read_parquet(s.world_dir / "truth" / "source_utility.parquet"))
    days = lake.materialized_dates("memory_snapshot", variant="source_memory")
    test = [d for d in days if s.splits.test[0].isoformat() <= d <= s.splits.test[1].isoformat()]
    last = test[-1]
    snap = lake.read("memory_snapshot", dates=[last], variant="source_memory")
    order = family_ordering(snap, planted, args.min_n)
    conc, pairs = pairwise_concordance(snap, planted, args.min_n)
    pl.Config.set_tbl_rows(40)
    pl.Config.set_tbl_cols(12)
    print(f"snapshot {last} (test split {s.splits.test[0]}..{s.splits.test[1]}, memory reset at its start)")
    print(
        snap.join(planted_for(snap, planted), on=["source_family", "event_type", "horizon"])
        .select("source_family", "event_type", "horizon", "n", "u_hat", "planted")
        .sort("event_type", "horizon", "source_family")
    )
    print(
        f"cells where two families with different planted utilities have n >= {args.min_n:g}: {order.height}; family ordering agrees in {order['agree'].sum() if order.height else 0} "
        f"({(order['agree'].mean() if order.height else float('nan')):.0%})"
    )
    if "pairs" in order.columns:  # memory.families = "fine": a cell agrees when every pair of its families does
        print(f"pairs of families in the planted order: {int(order['pairs_in_order'].sum())} of {int(order['pairs'].sum())}")
    print(f"pairwise concordance of û with planted utility over cells with n >= {args.min_n:g}: {conc:.2f} over {pairs} pairs")
    print(order)
    anchors = lake.read("anchors", dates=test)
    ctx = {v: lake.read("contexts", dates=test, variant=v) for v in ("no_memory", "source_memory")}
    for v, c in ctx.items():
        sh = useful_share_by_period(c, anchors, planted, "1q")
        vals = sh["useful_share"].to_list()
        print(f"{v}: useful-family share of top-5 slots by quarter: {[round(x, 3) for x in vals]} (trend {trend(vals):+.4f}/quarter)")
    g = useful_share_gain(ctx["source_memory"], ctx["no_memory"], anchors, planted, "1q")
    gains = g["gain"].to_list()
    print(f"source_memory minus no_memory by quarter: {[round(x, 4) for x in gains]} (trend {trend(gains):+.4f}/quarter)")
    first = sorted(set(test))[:10]
    early = useful_share_gain(
        ctx["source_memory"].filter(pl.col("date").cast(pl.Utf8).is_in(first)),
        ctx["no_memory"].filter(pl.col("date").cast(pl.Utf8).is_in(first)),
        anchors,
        planted,
        "1y",
    )
    print(f"... over the first 10 test days (memory just reset): {early['gain'][0]:+.4f}")
    use = useful_family(planted)
    for et in sorted(use):
        ids = anchors.filter(pl.col("event_type") == et).select("anchor_id")
        ge = useful_share_gain(ctx["source_memory"].join(ids, on="anchor_id"), ctx["no_memory"].join(ids, on="anchor_id"), anchors, planted, "1q")
        print(f"  {et} (useful: {use[et]}): {[round(x, 4) for x in ge['gain'].to_list()]}")
    sec = {v: c.filter(pl.col("source_family") == "sec_filing").height / max(1, c.height) for v, c in ctx.items()}
    print("SEC share of all context slots: " + ", ".join(f"{v} {x:.3f}" for v, x in sec.items()))
    k, n = changed_contexts(ctx["source_memory"], ctx["no_memory"])
    print(f"anchors whose top-5 differs with the memory: {k} of {n} ({k / max(1, n):.1%})")
    lam = s.memory.lam if s.memory.test_params == "settings" else float("nan")
    print(f"memory term lambda * mean_h adj per event type and family on {last} (lambda = {lam}):")
    print(memory_terms(snap, lam))


if __name__ == "__main__":
    main()
