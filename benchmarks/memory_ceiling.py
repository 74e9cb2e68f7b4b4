"""The most the source memory can do on the oracle world: a memory that knows the planted utilities.

    .venv/bin/finrag demo --config configs/oracle.toml --start 2019-01-02 --end 2023-12-29
    .venv/bin/python benchmarks/memory_ceiling.py --config configs/oracle.toml --split test

No reader's feedback can teach the memory more than the world's planted source utilities. This
sets every cell to them (û = planted probability, η ≈ 1), reranks each anchor's candidate pool with
eq. 6 (the pipeline's own ``rerank``), and compares with the static top 5 (λ = 0): anchors whose
context changes (set, and set or order), the event type's useful family's share of context slots
per year, and, for each embedded reader, Table 2's metrics read on both context sets. Run at the
default (λ, δ) = (0.30, 0.20) (docs/method.md §4) and at the largest corner of seed 000 Table 6's grid (0.50, 0.30).
Nothing is written to the lake.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.reader_oracle import NoCache, metrics  # noqa: E402
from finrag_dagster.core.calendar import TradingCalendar  # noqa: E402
from finrag_dagster.core.evaluation.oracle import changed_contexts, changed_order, planted_memory, planted_table, useful_share_gain  # noqa: E402
from finrag_dagster.core.tables import Lake  # noqa: E402
from finrag_dagster.core.loop_io import build_env  # noqa: E402
from finrag_dagster.core.memory.source_memory import MemoryParams, rerank  # noqa: E402
from finrag_dagster.core.reader.backends import EMBEDDED_READERS, BackendConfig, EmbeddedBackend  # noqa: E402
from finrag_dagster.core.reader.run import PromptTexts, read_day  # noqa: E402
from finrag_dagster.core.settings import SPLIT_NAMES, load_settings  # noqa: E402
from finrag_dagster.core.splits import split_bounds  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/oracle.toml")
    ap.add_argument("--split", choices=("validation", "test"), default="test")
    ap.add_argument("--settings", default="0.30:0.20,0.50:0.30", help="lambda:delta pairs")
    ap.add_argument("--readers", default=",".join(EMBEDDED_READERS))
    args = ap.parse_args()
    s = load_settings(args.config)
    lake = Lake(s.lake_dir)
    cal = TradingCalendar.nyse()
    a, b = dict(zip(SPLIT_NAMES, split_bounds(s, cal)))[args.split]
    days = [d.isoformat() for d in cal.sessions_in_range(a, b) if lake.exists("anchors", date=d.isoformat())]
    labels = lake.read("labels", dates=days)
    anchors = lake.read("anchors", dates=days)
    planted = planted_table(pl.read_parquet(s.world_dir / "truth" / "source_utility.parquet"))
    stamp = lambda f, d: f.with_columns(pl.lit(dt.date.fromisoformat(d)).alias("date"))  # noqa: E731
    print(f"{args.split} split {days[0]}..{days[-1]}: {len(days)} days, {anchors.height} anchors")
    backends = {r: EmbeddedBackend(BackendConfig(embedded=r)) for r in args.readers.split(",")}
    env = build_env(s, lake, cal, days, backends[next(iter(backends))], MemoryParams(), {})
    keys = dict(zip(anchors["anchor_id"].to_list(), anchors["event_type"].to_list()))
    ctx = {"static": []}
    settings = [tuple(float(x) for x in p.split(":")) for p in args.settings.split(",")]
    for d in days:
        cands = env.day_data(d).candidates
        ctx["static"].append(stamp(rerank(cands, keys, None, 0.0, s.retrieval.m), d))
        for lam, delta in settings:
            mem = planted_memory(planted, MemoryParams(kappa=s.memory.kappa, delta=delta, lam=lam))
            ctx.setdefault((lam, delta), []).append(stamp(rerank(cands, keys, mem, lam, s.retrieval.m), d))
    ctx = {k: pl.concat(v) for k, v in ctx.items()}
    rows = []
    for lam, delta in settings:
        c = ctx[(lam, delta)]
        k, n = changed_contexts(c, ctx["static"])
        g = useful_share_gain(c, ctx["static"], anchors, planted, "1y")
        print(
            f"\nlambda={lam} delta={delta}, memory = planted utilities: top-5 set differs for {k} of {n} anchors ({k / n:.1%}), "
            f"set or order for {changed_order(c, ctx['static'])} ({changed_order(c, ctx['static']) / n:.1%})"
        )
        print("  useful family's share of the top 5, with minus without memory, by year:", [round(x, 4) for x in g["gain"].to_list()])
        rows.append({"lambda": lam, "delta": delta, "set_changed": k / n, "share_gain_last_year": g["gain"].to_list()[-1]})
    for name, be in backends.items():
        outs = {}
        for kind, c in ctx.items():
            frames = []
            for d in days:
                data = env.day_data(d)
                o, _ = read_day(
                    d,
                    data.anchors,
                    c.filter(pl.col("date") == dt.date.fromisoformat(d)).drop("date"),
                    PromptTexts(env.evidence, data.cards, env.companies),
                    be,
                    NoCache(),
                    {},
                )
                frames.append(stamp(o, d))
            outs[kind] = metrics(pl.concat(frames), c, labels)
        base = outs["static"]
        print(f"\nreader {name}: static Macro-F1 {base['Macro-F1']:.4f}, Non-neutral F1 {base['Non-neutral F1']:.4f}, Rank IC {base['Rank IC']:.4f}")
        for lam, delta in settings:
            m = outs[(lam, delta)]
            print(
                f"  lambda={lam} delta={delta}: Macro-F1 {m['Macro-F1'] - base['Macro-F1']:+.4f}, Non-neutral F1 "
                f"{m['Non-neutral F1'] - base['Non-neutral F1']:+.4f}, Rank IC {m['Rank IC'] - base['Rank IC']:+.4f} (perfect memory minus none)"
            )


if __name__ == "__main__":
    main()
