"""seed 000 Table 6 / App. C: memory strength on the validation split.

Each (λ, δ) setting re-runs the source-memory loop over the validation days (memory reset at
the split start, same candidates, same reader; the prompt cache answers repeated prompts) and is
scored with the same metrics and portfolio rule. The selected setting maximises validation
non-neutral F1, then Sharpe; the test split is then run with it (settings.memory).
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from ..loop import LoopEnv, Variant, run_days
from ..memory.source_memory import MemoryParams
from .metrics import event_metrics, rank_ic
from .portfolio import run_book, sleeves, strategy_targets, summary

LAMBDAS = (0.0, 0.1, 0.2, 0.3, 0.5)
DELTAS = (0.05, 0.10, 0.15, 0.20, 0.30)


def grid(lam0: float = 0.30, delta0: float = 0.20) -> list[tuple[str, float, float]]:
    """("lambda" | "delta", λ, δ): λ varied at δ0, then δ varied at λ0 (Table 6's layout)."""
    return [("lambda", lam, delta0) for lam in LAMBDAS] + [("delta", lam0, d) for d in DELTAS]


def stock_day_from(outputs: pl.DataFrame, contexts: pl.DataFrame) -> pl.DataFrame:
    """The stock_day_signals model in polars (for runs that are not written to the lake)."""
    # values sorted inside each group: float sums in a fixed order, the same to the bit every run
    rel = contexts.group_by(["date", "anchor_id"]).agg(pl.col("relevance").sort().mean().alias("r"))
    j = outputs.join(rel, on=["date", "anchor_id"], how="left")
    return j.group_by(["date", "ticker", "horizon"]).agg(pl.col("signal").cast(pl.Float64).mean().alias("signal"), pl.col("r").sort().mean().alias("mean_relevance"))


def run_setting(env: LoopEnv, days: list[str], lam: float, delta: float, kappa: float, labels: pl.DataFrame, returns: dict) -> dict:
    env.params = MemoryParams(kappa=kappa, delta=delta, lam=lam)
    res = run_days(days, Variant(f"sens_l{lam}_d{delta}", "source_memory", lam), env, None)
    out = pl.concat([r.outputs.with_columns(pl.lit(dt.date.fromisoformat(r.day)).alias("date")) for r in res])
    ctx = pl.concat([r.contexts.with_columns(pl.lit(dt.date.fromisoformat(r.day)).alias("date")) for r in res])
    ok = labels.filter(pl.col("status") == "ok").select("date", "ticker", "horizon", "y", "z")
    pred = out.select("date", "ticker", "horizon", "signal").join(ok, on=["date", "ticker", "horizon"])
    m = event_metrics(pred)
    sd = stock_day_from(out, ctx)
    m["Rank IC"] = rank_ic(sd.join(ok.select("date", "ticker", "horizon", "z"), on=["date", "ticker", "horizon"]))
    dd = [dt.date.fromisoformat(d) for d in days]
    book = run_book(strategy_targets(sleeves(sd.filter(pl.col("horizon") == "3D")), dd), returns, dd)
    m["Sharpe"] = summary(book)["Sharpe"]
    return m


def select(results: list[dict]) -> dict:
    """Best validation non-neutral F1, ties broken by Sharpe (seed 000 App. C)."""
    return max(results, key=lambda r: (round(r["Non-neutral F1"], 6), r["Sharpe"] if r["Sharpe"] == r["Sharpe"] else -1e9))
