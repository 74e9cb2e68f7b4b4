"""seed 000 Table 6 / App. C: memory strength on the validation split.

Each (λ, δ) setting re-runs the source-memory loop over the validation days (memory reset at
the split start, same candidates, same reader; the prompt cache answers repeated prompts) and is
scored with the same metrics and portfolio rule. The selected setting maximises validation
non-neutral F1, then Sharpe; the test split is then run with it (settings.memory).
:func:`table6` does it over the lake and writes the ``sensitivity`` table.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from ..loop import LoopEnv, Variant, run_days
from ..loop_io import build_env
from ..memory.source_memory import MemoryParams
from ..reader.backends import BackendConfig, make_backend
from ..splits import split_days
from .metrics import event_metrics, rank_ic
from .portfolio import run_book, sleeves, strategy_targets, summary
from .tables import LONG_SCHEMA, daily_returns, long_rows

if TYPE_CHECKING:
    from ..calendar import TradingCalendar
    from ..settings import Settings
    from ..storage.lake import Lake

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
    return j.group_by(["date", "ticker", "horizon"]).agg(
        pl.col("signal").cast(pl.Float64).mean().alias("signal"), pl.col("r").sort().mean().alias("mean_relevance")
    )


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


@dataclass
class Table6:
    """What :func:`table6` wrote: the table, the selection (None without validation days), the
    label rows it was scored on out of all validation label rows, and the day the selection is used from."""

    table: pl.DataFrame
    best: dict | None = None
    labels_used: int = 0
    labels_all: int = 0
    used_from: str = ""


def table6(s: Settings, lake: Lake, cal: TradingCalendar) -> Table6:
    """Table 6 over the lake's validation days, scored on the validation labels that matured
    before the test split starts, written as the ``sensitivity`` table (empty without validation days)."""
    days = split_days(s, cal, lake, "validation")
    if not days:
        df = pl.DataFrame(schema=LONG_SCHEMA)
        lake.write("sensitivity", df)
        return Table6(df)
    bcfg = BackendConfig.from_settings(s)
    env = build_env(s, lake, cal, days=days, backend=make_backend(bcfg), params=MemoryParams.from_settings(s), decoding=bcfg.decoding())
    # the selection is used from the test split's first session (whether or not its anchors are
    # in the lake yet): only labels matured before that session count
    test_sessions = cal.sessions_in_range(*s.splits.test)
    test_start = test_sessions[0] if test_sessions else cal.offset(days[-1], 1)
    labels = lake.read("labels", dates=days)
    n_all = labels.height
    labels = labels.filter(pl.col("maturity_day") < test_start)
    rets = daily_returns(lake, days, [])
    results, rows = [], []
    for kind, lam, delta in grid(s.memory.lam, s.memory.delta):
        m = run_setting(env, days, lam, delta=delta, kappa=s.memory.kappa, labels=labels, returns=rets)
        m.update({"kind": kind, "lambda": lam, "delta": delta})
        results.append(m)
        rows += long_rows(
            "Table 6",
            "validation",
            f"{kind}: lambda={lam:.2f} delta={delta:.2f}",
            {k: m[k] for k in ("Non-neutral F1", "Macro-F1", "Rank IC", "Sharpe")},
            m["n"],
        )
    best = select(results)
    rows += long_rows("Table 6", "validation", "selected", {"lambda": best["lambda"], "delta": best["delta"]}, best["n"])
    df = pl.DataFrame(rows, schema=LONG_SCHEMA)
    lake.write("sensitivity", df)
    return Table6(df, best, labels.height, n_all, test_start.isoformat())
