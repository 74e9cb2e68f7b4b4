"""seed 000 Tables 2, 3, 4 and 6 from the lake (SPEC §7)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pyarrow as pa

from ..schemas import TableSpec
from .metrics import event_metrics, rank_ic
from .portfolio import buy_and_hold, equal_weight_targets, run_book, sleeves, strategy_targets, summary

if TYPE_CHECKING:
    from ..lake import Lake

EVALUATION = TableSpec(
    "evaluation",
    pa.schema([
        pa.field("table", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("row", pa.string(), nullable=False),
        pa.field("metric", pa.string(), nullable=False),
        pa.field("value", pa.float64(), nullable=True),
        pa.field("std", pa.float64(), nullable=True),
        pa.field("n", pa.int64(), nullable=False),
    ]),
    (),
    ("table", "split", "row", "metric"),
    "seed 000 Tables 2/3/4/6 in long form (mean and, over shuffles, std).",
)
SENSITIVITY = TableSpec("sensitivity", EVALUATION.schema, (), ("table", "split", "row", "metric"),
                        "seed 000 Table 6: memory strength (lambda, delta) on the validation split.")
PORTFOLIO_DAILY = TableSpec(
    "portfolio_daily",
    pa.schema([
        pa.field("strategy", pa.string(), nullable=False),
        pa.field("split", pa.string(), nullable=False),
        pa.field("gross", pa.float64(), nullable=False),
        pa.field("turnover", pa.float64(), nullable=False),
        pa.field("net", pa.float64(), nullable=False),
        pa.field("n_names", pa.int64(), nullable=False),
        pa.field("cum_net", pa.float64(), nullable=False),
    ]),
    ("date",),
    ("strategy", "split"),
    "Daily gross/net return and turnover of the 3D portfolio per variant and the benchmarks.",
)

VARIANT_LABEL = {
    "no_memory": "Frozen + No Memory",
    "source_memory": "Frozen + Source Memory",
    "top5_all_source": "+ Top-5 all-source update",
    "shuffled_labels": "+ Shuffled feedback labels",
    "shuffled_event_types": "+ Shuffled event types",
    "toe": "Frozen + ToE",
    "source_memory_toe": "Frozen + Source Memory + ToE",
}
MAIN_VARIANTS = ("no_memory", "source_memory", "toe", "source_memory_toe")  # Table 2 and Table 4 rows


def predictions(lake: Lake, variant: str, days: list[str]) -> pl.DataFrame:
    """Anchor-level signals joined to matured ok labels: horizon, signal, y, z, ticker, date."""
    out = lake.read("reader_outputs", dates=days, variant=variant, columns=["anchor_id", "ticker", "horizon", "signal"])
    lab = lake.read("labels", dates=days, columns=["ticker", "horizon", "status", "y", "z"]).filter(pl.col("status") == "ok")
    if out.height == 0 or lab.height == 0:
        return pl.DataFrame(schema={"date": pl.Date, "ticker": pl.Utf8, "horizon": pl.Utf8, "signal": pl.Int8, "y": pl.Int8, "z": pl.Float64})
    return out.drop("variant").join(lab.drop("status"), on=["date", "ticker", "horizon"]).select("date", "ticker", "horizon", "signal", "y", "z")


def stock_day(lake: Lake, variant: str, days: list[str]) -> pl.DataFrame:
    sd = lake.read("stock_day_signals", dates=days).filter(pl.col("variant") == variant)
    lab = lake.read("labels", dates=days, columns=["ticker", "horizon", "status", "z"]).filter(pl.col("status") == "ok").drop("status")
    return sd.join(lab, on=["date", "ticker", "horizon"], how="left")


def variant_metrics(lake: Lake, variant: str, days: list[str]) -> dict:
    m = event_metrics(predictions(lake, variant, days))
    sd = stock_day(lake, variant, days).filter(pl.col("z").is_not_null())
    m["Rank IC"] = rank_ic(sd)
    return m


def _rows(table: str, split: str, row: str, vals: dict, n: int, stds: dict | None = None) -> list[dict]:
    return [
        {"table": table, "split": split, "row": row, "metric": k, "value": None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v),
         "std": (stds or {}).get(k), "n": int(n)}
        for k, v in vals.items() if k != "n"
    ]


def family_metrics(lake: Lake, family: str, names: list[str], days: list[str]) -> tuple[dict, dict, int]:
    """Mean (and std over seeds) of a variant family's metrics."""
    ms = [variant_metrics(lake, v, days) for v in names]
    keys = [k for k in ms[0] if k != "n"]
    mean = {k: float(np.nanmean([m[k] for m in ms])) if ms else math.nan for k in keys}
    std = {k: float(np.nanstd([m[k] for m in ms], ddof=1)) if len(ms) > 1 else None for k in keys}
    return mean, std, int(np.mean([m["n"] for m in ms]))


def daily_returns(lake: Lake, days: list[str], tickers: Iterable[str]) -> dict:
    """{date: {ticker: close(t-1)->close(t) return}} from the returns model."""
    r = lake.read("returns", dates=days, columns=["ticker", "ret_1d"]).filter(pl.col("ret_1d").is_not_null())
    out: dict = {}
    for d, t, x in zip(r["date"], r["ticker"], r["ret_1d"]):
        out.setdefault(d, {})[t] = x
    return out


def portfolio_books(lake: Lake, variants: list[str], days: list[str], market: str, universe: list[str], k: int = 10, cost: float = 0.001) -> dict[str, pl.DataFrame]:
    """Daily books of each variant's 3D diagnostic and of the two benchmarks over ``days``."""
    dd = [dt.date.fromisoformat(d) for d in days]
    rets = daily_returns(lake, days, universe)
    books = {}
    # sleeves decided on the 3 sessions before the window still count on its first days
    for v in variants:
        sd = lake.read("stock_day_signals", dates=days).filter((pl.col("variant") == v) & (pl.col("horizon") == "3D"))
        books[v] = run_book(strategy_targets(sleeves(sd, k), dd), rets, dd, cost)
    books["QQQ buy-and-hold" if market == "QQQ" else f"{market} buy-and-hold"] = buy_and_hold(rets, dd, market)
    books["Equal-weight universe"] = run_book(equal_weight_targets(rets, dd, [u for u in universe if u != market]), rets, dd, cost)
    return books
