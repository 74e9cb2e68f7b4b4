"""Which embedded reader lets the source memory learn? Both readers, every memory variant, one split.

    .venv/bin/finrag demo --config configs/oracle.toml --start 2019-01-02 --end 2023-12-29
    .venv/bin/python benchmarks/reader_oracle.py --config configs/oracle.toml --split test
    .venv/bin/python benchmarks/reader_oracle.py --config configs/oracle.toml --split test --credit passage_stance
    .venv/bin/python benchmarks/oracle_lake.py --config configs/oracle_publishers.toml     # the stages it reads, only
    .venv/bin/python benchmarks/reader_oracle.py --config configs/oracle_publishers.toml --split test --memory-families fine

Re-runs the feedback loop in process (the same ``core.loop`` code the variant assets run) over the
lake's anchors, candidate pools and labels, for each named embedded reader and each memory variant,
with the memory reset at the split's first day. Nothing is written to the lake. Prints, per reader:
Table 2's metrics per variant (non-neutral F1, macro-F1 per horizon, Rank IC), the oracle checks
against the world's planted source utilities (family ordering in cells with n >= 100 from both
families, the useful family's share of the top 5 with minus without the memory, per year), and the
shuffled families' mean and spread over their seeds. ``--split validation`` is the split the
readers' constants were chosen on; ``--split test`` is read once, after they were fixed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from finrag_dagster.core.calendar import TradingCalendar  # noqa: E402
from finrag_dagster.core.evaluation.metrics import event_metrics, rank_ic  # noqa: E402
from finrag_dagster.core.evaluation.oracle import (  # noqa: E402
    changed_contexts,
    family_ordering,
    planted_table,
    useful_share_gain,
)
from finrag_dagster.core.evaluation.sensitivity import stock_day_from  # noqa: E402
from finrag_dagster.core.tables import Lake  # noqa: E402
from finrag_dagster.core.loop import run_days, variants_of  # noqa: E402
from finrag_dagster.core.loop_io import build_env  # noqa: E402
from finrag_dagster.core.memory.source_memory import MemoryParams  # noqa: E402
from finrag_dagster.core.reader.backends import EMBEDDED_READERS, BackendConfig, EmbeddedBackend  # noqa: E402
from finrag_dagster.core.reader.embedded import EvidenceRules  # noqa: E402
from finrag_dagster.core.settings import HORIZON_KEYS, SPLIT_NAMES, Settings, load_settings  # noqa: E402
from finrag_dagster.core.splits import split_bounds  # noqa: E402


class NoCache:
    """A prompt cache that keeps nothing (this benchmark writes nothing to the lake)."""

    hits = misses = 0

    def get(self, key):
        return None

    def put(self, *a, **k):
        pass

    def flush(self):
        return 0


def run_variant(env, days, v):
    res = run_days(days, v, env, None)
    stamp = lambda f, d: f.with_columns(pl.lit(dt.date.fromisoformat(d)).alias("date"))  # noqa: E731
    out = pl.concat([stamp(r.outputs, r.day) for r in res])
    ctx = pl.concat([stamp(r.contexts, r.day) for r in res])
    snap = res[-1].snapshot
    return out, ctx, snap


def metrics(out: pl.DataFrame, ctx: pl.DataFrame, labels: pl.DataFrame) -> dict:
    ok = labels.filter(pl.col("status") == "ok").select("date", "ticker", "horizon", "y", "z")
    pred = out.select("date", "ticker", "horizon", "signal").join(ok, on=["date", "ticker", "horizon"])
    m = event_metrics(pred)
    for h in HORIZON_KEYS:
        from finrag_dagster.core.f1 import non_neutral_f1

        g = pred.filter(pl.col("horizon") == h)
        m[f"{h} NN-F1"] = non_neutral_f1(g["y"].to_numpy(), g["signal"].to_numpy())
    sd = stock_day_from(out, ctx)
    m["Rank IC"] = rank_ic(sd.join(ok.select("date", "ticker", "horizon", "z"), on=["date", "ticker", "horizon"]))
    cites = out.filter(pl.col("signal") != 0)
    m["cited share of non-neutral"] = float((cites["valid_ids"].list.len() > 0).mean()) if cites.height else float("nan")
    return m


def parse_args() -> argparse.Namespace:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="configs/oracle.toml")
    ap.add_argument("--split", choices=("validation", "test"), default="validation")
    ap.add_argument("--readers", default=",".join(EMBEDDED_READERS))
    ap.add_argument("--families", default="no_memory,source_memory,top5_all_source,shuffled_labels,shuffled_event_types")
    ap.add_argument("--seeds", type=int, default=5, help="repeats of each shuffled family")
    ap.add_argument("--min-n", type=float, default=100)
    ap.add_argument("--rules", default="{}", help='JSON {"name": {EvidenceRules field: value}}: extra evidence-reader settings to compare')
    ap.add_argument("--json", help="also write the numbers here")
    ap.add_argument(
        "--credit",
        choices=("cited_correct", "passage_stance"),
        default=None,
        help="memory.credit for this run (default: the config's): passage_stance is the extension of docs/method.md §4",
    )
    ap.add_argument(
        "--memory-families",
        choices=("seed000", "fine"),
        default=None,
        help="memory.families for this run (default: the config's): fine is the extension of docs/method.md §4",
    )
    return ap.parse_args()


class Split(NamedTuple):
    """The split's days and what the loop and the checks read for them."""

    lake: Lake
    cal: TradingCalendar
    days: list[str]
    labels: pl.DataFrame
    anchors: pl.DataFrame
    planted: pl.DataFrame | None
    params: MemoryParams


def load_split(args: argparse.Namespace) -> tuple[Settings, Split]:
    """The config (with ``--credit`` and ``--memory-families``) and the split's inputs; prints them."""
    s = load_settings(args.config)
    if args.credit:
        s = s.with_overrides(memory={"credit": args.credit})
    if args.memory_families:
        s = s.with_overrides(memory={"families": args.memory_families})
    lake = Lake(s.lake_dir)
    cal = TradingCalendar.nyse()
    bounds = dict(zip(SPLIT_NAMES, split_bounds(s, cal)))
    a, b = bounds[args.split]
    days = [d.isoformat() for d in cal.sessions_in_range(a, b) if lake.exists("anchors", date=d.isoformat())]
    labels = lake.read("labels", dates=days)
    anchors = lake.read("anchors", dates=days)
    truth = s.world_dir / "truth" / "source_utility.parquet"
    planted = planted_table(pl.read_parquet(truth)) if truth.exists() else None  # real data: no planted utilities
    params = MemoryParams(kappa=s.memory.kappa, delta=s.memory.delta, lam=s.memory.lam)
    print(
        f"{args.split} split {days[0]}..{days[-1]}: {len(days)} days, {anchors.height} anchors; memory kappa={params.kappa} "
        f"delta={params.delta} lambda={params.lam}, reset on {days[0]}; memory.credit = {s.memory.credit}, memory.families = {s.memory.families}"
        + (" (an extension beyond seed 000)" if (s.memory.credit, s.memory.families) != ("cited_correct", "seed000") else "")
    )
    return s, Split(lake, cal, days, labels, anchors, planted, params)


def run_reader(args: argparse.Namespace, s: Settings, sp: Split, backend: EmbeddedBackend) -> dict:
    """Every variant of the named families through the split with this reader: name -> (family, outputs, contexts, snapshot)."""
    env = build_env(s, sp.lake, sp.cal, sp.days, backend, sp.params, backend.cfg.decoding())
    env.cache_of = lambda d: NoCache()
    runs = {}
    for fam in args.families.split(","):
        for v in variants_of(fam, sp.params.lam, args.seeds):
            runs[v.name] = (fam, *run_variant(env, sp.days, v))
    return runs


def print_variants(runs: dict, labels: pl.DataFrame) -> tuple[list[dict], dict[str, list[dict]]]:
    """Table 2's metrics per variant, printed; the rows and the metrics grouped by family."""
    rows, by_fam = [], {}
    for name, (fam, out, ctx, snap) in runs.items():
        m = metrics(out, ctx, labels)
        by_fam.setdefault(fam, []).append(m)
        rows.append({"variant": name, **{k: round(v, 4) for k, v in m.items() if k != "n"}})
    pl.Config.set_tbl_cols(20)
    pl.Config.set_tbl_width_chars(250)
    pl.Config.set_tbl_rows(40)
    print(pl.DataFrame(rows))
    return rows, by_fam


def print_families(by_fam: dict[str, list[dict]]) -> list[dict]:
    """Each family's mean and spread over its seeds, printed; the rows."""
    fam_rows = []
    for fam, ms in by_fam.items():
        keys = ("Non-neutral F1", "Macro-F1", "Rank IC")
        fam_rows.append(
            {
                "family": fam,
                "seeds": len(ms),
                **{k: round(float(np.mean([m[k] for m in ms])), 4) for k in keys},
                **{f"{k} sd": round(float(np.std([m[k] for m in ms], ddof=1)), 4) if len(ms) > 1 else None for k in keys},
            }
        )
    print(pl.DataFrame(fam_rows))
    return fam_rows


def oracle_checks(args: argparse.Namespace, sp: Split, runs: dict, rep: dict) -> None:
    """The memory's changed contexts and, in the synthetic world, the planted-utility checks: printed and added to ``rep``."""
    if "source_memory" not in runs or "no_memory" not in runs:
        return
    _, _, ctx_m, snap = runs["source_memory"]
    _, _, ctx_0, _ = runs["no_memory"]
    k, n = changed_contexts(ctx_m, ctx_0)
    print(f"anchors whose top 5 differs with the memory: {k} of {n} ({k / max(1, n):.1%})")
    rep["changed"] = [k, n]
    if sp.planted is None:  # real data: no planted utilities to check against
        return
    order = family_ordering(snap, sp.planted, args.min_n)
    agree = int(order["agree"].sum()) if order.height else 0
    print(
        f"family ordering: {agree} of {order.height} cells with n >= {args.min_n:g} from two families of different planted utility agree with the planted order"
    )
    if "pairs" in order.columns:  # memory.families = "fine": a cell agrees when every pair of its families does
        print(f"  pairs of families in the planted order: {int(order['pairs_in_order'].sum())} of {int(order['pairs'].sum())}")
    print(order)
    g = useful_share_gain(ctx_m, ctx_0, sp.anchors, sp.planted, "1y")
    print("useful-family share of the top 5 by year, with minus without memory:", [round(x, 4) for x in g["gain"].to_list()])
    rep.update(ordering_agree=agree, ordering_cells=order.height, share_gain_by_year=g["gain"].to_list(), ordering=order.to_dicts())


def main() -> None:
    """Each reader (and each ``--rules`` setting) through every variant of the split: tables, checks, ``--json``."""
    args = parse_args()
    s, sp = load_split(args)
    report = {}
    extra = json.loads(args.rules)
    for reader in [r for r in args.readers.split(",") if r] + list(extra):
        if reader in extra:
            backend = EmbeddedBackend(BackendConfig(embedded="evidence"), EvidenceRules(**extra[reader]))
        else:
            backend = EmbeddedBackend(BackendConfig(embedded=reader))
        t0 = time.perf_counter()
        runs = run_reader(args, s, sp, backend)
        print(f"\n=== reader {reader} ({backend.model}); {time.perf_counter() - t0:.0f} s")
        rows, by_fam = print_variants(runs, sp.labels)
        fam_rows = print_families(by_fam)
        rep = {"variants": rows, "families": fam_rows}
        oracle_checks(args, sp, runs, rep)
        report[reader] = rep
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
