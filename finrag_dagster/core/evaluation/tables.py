"""seed 000 Tables 2, 3, 4 and 6 from the lake (docs/method.md §7).

:func:`evaluate` computes Tables 2-4 on the validation and test splits in long form (one row per
table, split, row and metric); :func:`run_evaluation` writes them with the daily portfolio books,
which is what the ``evaluation`` asset and ``finrag report`` do; :func:`metrics_md` shows them.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
import pyarrow as pa

from .. import families
from ..formatting import fmt, md_table
from ..loop import variants_of
from ..settings import SPLIT_NAMES
from ..splits import split_days
from ..storage.schemas import TableSpec
from .metrics import event_metrics, rank_ic
from .portfolio import buy_and_hold, equal_weight_targets, run_book, sleeves, strategy_targets, summary

if TYPE_CHECKING:
    from ..calendar import TradingCalendar
    from ..settings import Settings
    from ..storage.lake import Lake

EVALUATION = TableSpec(
    "evaluation",
    pa.schema(
        [
            pa.field("table", pa.string(), nullable=False),
            pa.field("split", pa.string(), nullable=False),
            pa.field("row", pa.string(), nullable=False),
            pa.field("metric", pa.string(), nullable=False),
            pa.field("value", pa.float64(), nullable=True),
            pa.field("std", pa.float64(), nullable=True),
            pa.field("n", pa.int64(), nullable=False),
        ]
    ),
    (),
    ("table", "split", "row", "metric"),
    "seed 000 Tables 2/3/4/6 in long form (mean and, over shuffles, std).",
)
SENSITIVITY = TableSpec(
    "sensitivity",
    EVALUATION.schema,
    (),
    ("table", "split", "row", "metric"),
    "seed 000 Table 6: memory strength (lambda, delta) on the validation split.",
)
PORTFOLIO_DAILY = TableSpec(
    "portfolio_daily",
    pa.schema(
        [
            pa.field("strategy", pa.string(), nullable=False),
            pa.field("split", pa.string(), nullable=False),
            pa.field("gross", pa.float64(), nullable=False),
            pa.field("turnover", pa.float64(), nullable=False),
            pa.field("net", pa.float64(), nullable=False),
            pa.field("n_names", pa.int64(), nullable=False),
            pa.field("cum_net", pa.float64(), nullable=False),
        ]
    ),
    ("date",),
    ("strategy", "split"),
    "Daily gross/net return and turnover of the 3D portfolio per variant and the benchmarks.",
)

VARIANT_LABEL = families.LABELS  # each family's row label (core/families.py)
MAIN_VARIANTS = families.rows_of("main")  # Table 2 and Table 4 rows
LORA_ROWS = families.rows_of("lora")  # Table 2 and Table 4 rows, mean ± std over the trained seeds
METRICS = ["Non-neutral F1", "Macro-F1", "1D Macro-F1", "3D Macro-F1", "5D Macro-F1", "Rank IC"]  # Table 2's columns
PORTFOLIO = ["Ann. Ret.", "Ann. Vol.", "Sharpe", "Max DD", "Turnover"]  # Table 4's columns
PCT = frozenset({"Ann. Ret.", "Ann. Vol.", "Max DD"})  # shown as percentages
LONG_SCHEMA = {"table": pl.Utf8, "split": pl.Utf8, "row": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64, "std": pl.Float64, "n": pl.Int64}


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


def long_rows(table: str, split: str, row: str, vals: dict, n: int, stds: dict | None = None) -> list[dict]:
    return [
        {
            "table": table,
            "split": split,
            "row": row,
            "metric": k,
            "value": None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v),
            "std": (stds or {}).get(k),
            "n": int(n),
        }
        for k, v in vals.items()
        if k != "n"
    ]


def nanmean(xs: list[float]) -> float:
    """``np.nanmean``, NaN without a RuntimeWarning when every value is NaN (a metric no seed could score)."""
    a = np.asarray(xs, dtype=float)
    return float(np.nanmean(a)) if np.any(~np.isnan(a)) else math.nan


def nanstd(xs: list[float], ddof: int = 1) -> float:
    """``np.nanstd(ddof=1)``, NaN without a RuntimeWarning when fewer than two values are not NaN."""
    a = np.asarray(xs, dtype=float)
    return float(np.nanstd(a, ddof=ddof)) if np.count_nonzero(~np.isnan(a)) > ddof else math.nan


def family_metrics(lake: Lake, family: str, names: list[str], days: list[str]) -> tuple[dict, dict, int]:
    """Mean (and std over seeds) of a variant family's metrics."""
    ms = [variant_metrics(lake, v, days) for v in names]
    keys = [k for k in ms[0] if k != "n"]
    mean = {k: nanmean([m[k] for m in ms]) if ms else math.nan for k in keys}
    std = {k: nanstd([m[k] for m in ms]) if len(ms) > 1 else None for k in keys}
    return mean, std, int(np.mean([m["n"] for m in ms]))


def daily_returns(lake: Lake, days: list[str], tickers: Iterable[str]) -> dict:
    """{date: {ticker: close(t-1)->close(t) return}} from the returns model."""
    r = lake.read("returns", dates=days, columns=["ticker", "ret_1d"]).filter(pl.col("ret_1d").is_not_null())
    out: dict = {}
    for d, t, x in zip(r["date"], r["ticker"], r["ret_1d"]):
        out.setdefault(d, {})[t] = x
    return out


def portfolio_books(
    lake: Lake, variants: list[str], days: list[str], market: str, universe: list[str], k: int = 10, cost: float = 0.001
) -> dict[str, pl.DataFrame]:
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


# ------------------------------------------------------------------ Tables 2-4 of the lake
def evaluate(s: Settings, lake: Lake, cal: TradingCalendar) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(Tables 2-4 in long form, the daily books) on the validation and test splits' materialised days."""
    rows, daily = [], []
    uni = lake.read("universe")
    market = s.market_ticker
    for split in SPLIT_NAMES[1:]:  # validation and test; train only feeds the class weights
        days = split_days(s, cal, lake, split)
        if not days:
            continue
        seeds = s.lora.seeds
        fams = [
            f
            for f in s.variants.families
            if f not in LORA_ROWS and lake.exists("reader_outputs", variant=variants_of(f, 0.3, s.variants.shuffle_seeds)[0].name, date=days[-1])
        ]
        # a LoRA family counts the seeds whose adapter was trained and read (outputs on the last day)
        lora_names = {
            f: [
                v.name
                for v in variants_of(f, s.memory.lam, s.variants.shuffle_seeds, seeds)
                if lake.exists("reader_outputs", variant=v.name, date=days[-1])
            ]
            for f in s.variants.families
            if f in LORA_ROWS
        }
        lora_names = {f: n for f, n in lora_names.items() if n}
        for f in fams + list(lora_names):
            names = lora_names.get(f) or [v.name for v in variants_of(f, s.memory.lam, s.variants.shuffle_seeds)]
            mean, std, n = family_metrics(lake, f, names, days)
            label = VARIANT_LABEL.get(f, f)
            if f in MAIN_VARIANTS:
                rows += long_rows("Table 2", split, label, mean, n)
            if f in LORA_ROWS:
                rows += long_rows("Table 2", split, label, mean, n, std if len(names) > 1 else None)
            if f in MAIN_VARIANTS[2:] or f in LORA_ROWS:
                continue  # Table 3 is the source memory's validity checks
            rows += long_rows(
                "Table 3",
                split,
                label,
                {k: mean[k] for k in ("Non-neutral F1", "Macro-F1", "Rank IC")},
                n,
                {k: std[k] for k in ("Non-neutral F1", "Macro-F1", "Rank IC")} if len(names) > 1 else None,
            )
        strat = [f for f in MAIN_VARIANTS if f in fams]
        books = portfolio_books(lake, strat, days, market, uni["ticker"].to_list())
        for name, b in books.items():
            label = VARIANT_LABEL.get(name, name)
            rows += long_rows("Table 4", split, label, summary(b), b.height)
            daily.append(
                b.with_columns(pl.lit(label).alias("strategy"), pl.lit(split).alias("split"), (pl.col("net") + 1).cum_prod().sub(1).alias("cum_net"))
            )
        for f, names in lora_names.items():  # one book per seed; the row is mean ± std of their summaries
            seed_books = portfolio_books(lake, names, days, market, uni["ticker"].to_list())
            sums = [summary(seed_books[n]) for n in names]
            keys = list(sums[0])
            mean = {k: nanmean([x[k] for x in sums]) for k in keys}
            std = {k: nanstd([x[k] for x in sums]) for k in keys} if len(sums) > 1 else None
            rows += long_rows("Table 4", split, VARIANT_LABEL[f], mean, seed_books[names[0]].height, std)
            daily.append(
                seed_mean_book(seed_books, names).with_columns(
                    pl.lit(VARIANT_LABEL[f]).alias("strategy"), pl.lit(split).alias("split"), (pl.col("net") + 1).cum_prod().sub(1).alias("cum_net")
                )
            )
    ev = pl.DataFrame(rows, schema=LONG_SCHEMA)
    pdaily = pl.concat(daily) if daily else pl.DataFrame()
    return ev, pdaily


def seed_mean_book(books: dict[str, pl.DataFrame], names: list[str]) -> pl.DataFrame:
    """A LoRA family's daily book for Figure 2: each day's gross, turnover and net averaged over the
    seeds' books (an equal-weight mix of the seeds' portfolios), names held: the most of any seed."""
    both = pl.concat([books[n].select("date", "gross", "turnover", "net", "n_names") for n in names])
    return (
        both.group_by("date")
        .agg(pl.col("gross", "turnover", "net").mean(), pl.col("n_names").max().cast(pl.Int64))
        .sort("date")
        .select(books[names[0]].columns)
    )


def run_evaluation(s: Settings, lake: Lake, cal: TradingCalendar) -> pl.DataFrame:
    """:func:`evaluate`, written: the ``evaluation`` table and the ``portfolio_daily`` books by day."""
    ev, daily = evaluate(s, lake, cal)
    lake.write("evaluation", ev)
    for d in sorted(set(daily["date"].to_list())) if daily.height else []:
        lake.write("portfolio_daily", daily.filter(pl.col("date") == d).drop("date"), date=d)
    return ev


def table2_rows(ev: pl.DataFrame) -> list[str]:
    """Table 2's rows in order: the main variants that were evaluated."""
    have = set(ev.filter(pl.col("table") == "Table 2")["row"].to_list())
    return [VARIANT_LABEL[f] for f in MAIN_VARIANTS + LORA_ROWS if VARIANT_LABEL[f] in have] or [
        VARIANT_LABEL["no_memory"],
        VARIANT_LABEL["source_memory"],
    ]


def table_cells(df: pl.DataFrame, rows: list[str], cols: list[str], pct=frozenset()) -> list[list[str]]:
    """[row label, formatted value (± std over seeds) per metric] from a long-form table."""
    out = []
    for r in rows:
        g = df.filter(pl.col("row") == r)
        line = [r]
        for c in cols:
            x = g.filter(pl.col("metric") == c)
            if x.height == 0:
                line.append("–")
                continue
            v, sd = x["value"][0], x["std"][0]
            line.append(fmt(v, c in pct) + (f" ± {fmt(sd, c in pct)}" if sd is not None and not math.isnan(sd) else ""))
        out.append(line)
    return out


def metrics_md(df: pl.DataFrame, rows: list[str], cols: list[str], pct=frozenset()) -> str:
    """A long-form table's ``rows`` × ``cols`` as markdown."""
    return md_table(["", *cols], table_cells(df, rows, cols, pct))
