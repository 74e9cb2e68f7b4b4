"""Seed 002 over the lake: the experience task's inputs, its run and its tables; the trees' tables.

The task itself (targets, outcomes, the methods, tsIC/csIC) is pure, in
:mod:`finrag_dagster.core.experience.task`; here its inputs are read from the lake (news and
anchors of days T-4..T per sector target, the prior tree), its scores and result tables are
written, and both the task's results and the experience trees are laid out as tables for the
report (HTML) and the assets' metadata (markdown).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from ..embeddings import embed
from ..experience.prior import TREE_ID, company_names
from ..experience.store import read_tree
from ..experience.task import HKEYS, METHODS, WINDOW, DayInput, digest, excess_returns, result_tables, run_task, sector_returns
from ..experience.tree import ToEParams
from ..formatting import fmt, md_table
from ..splits import split_days

if TYPE_CHECKING:
    from ..calendar import TradingCalendar
    from ..settings import Settings
    from ..storage.lake import Lake


# ------------------------------------------------------------------ the experience task
def task_inputs(s: Settings, lake: Lake, cal: TradingCalendar, days: list[str], priced: set[str] | None = None):
    """A function day -> [DayInput per sector target] over news of decision days T-4..T, the
    digests embedded in one MiniLM call per day. Targets: sectors with a member in ``priced``
    (tickers with prices; None: every member)."""
    uni = lake.read("universe")
    members = uni.filter(~pl.col("is_benchmark") & ~pl.col("sector").is_in(["", "Unknown", "ETF"]) & pl.col("sector").is_not_null())
    sector_of = dict(zip(members["ticker"], members["sector"]))  # news of every member counts for its sector
    targets = sorted({sector_of[t] for t in sector_of if priced is None or t in priced})
    names = company_names(lake)
    first = cal.offset(days[0], -(WINDOW - 1)).isoformat() if cal.session_index(days[0]) >= WINDOW - 1 else days[0]
    window_days = [d.isoformat() for d in cal.sessions_in_range(first, days[-1])]
    have_a = set(lake.materialized_dates("anchors"))
    have_n = set(lake.materialized_dates("news_raw"))
    a_days = [d for d in window_days if d in have_a]
    n_days = [d for d in window_days if d in have_n]
    anchors = lake.read("anchors", dates=a_days, columns=["ticker", "event_type", "headline", "summary"]) if a_days else pl.DataFrame()
    news = lake.read("news_raw", dates=n_days, columns=["ticker", "title", "summary"]) if n_days else pl.DataFrame()
    a_by = {d.isoformat(): g for (d,), g in anchors.group_by("date")} if anchors.height else {}
    n_by = {d.isoformat(): g for (d,), g in news.group_by("date")} if news.height else {}
    ev = s.evidence

    def inputs(t: dt.date) -> list[DayInput]:
        i = cal.session_index(t)
        win = [(cal.sessions[j].item().isoformat(), i - j) for j in range(max(0, i - WINDOW + 1), i + 1)]
        raw: dict[str, list] = {k: [] for k in targets}
        events: dict[str, list] = {k: [] for k in targets}
        for d, age in win:
            g = n_by.get(d)
            if g is not None:
                for tk, title, summ in g.select("ticker", "title", "summary").rows():
                    if sector_of.get(tk) in raw:
                        raw[sector_of[tk]].append(f"{title or ''}. {summ or ''}")
            g = a_by.get(d)
            if g is not None:
                for tk, et, head, summ in g.select("ticker", "event_type", "headline", "summary").rows():
                    if sector_of.get(tk) in events:
                        events[sector_of[tk]].append((tk, et, head or "", summ or "", age))
        out, states = [], []
        for k in targets:
            f_text, state = digest([e[:4] for e in events[k]], names) if events[k] else ("", "")
            out.append(DayInput(k, raw[k], sorted(events[k], key=lambda e: (e[4], e[0], e[2])), f_text, state, None))
            states.append(state)
        todo = [j for j, st in enumerate(states) if st]
        if todo:
            vecs = embed([states[j] for j in todo], ev.embed_batch_size, ev.embed_max_seq_length)
            for j, v in zip(todo, vecs):
                out[j].vec = np.asarray(v, dtype=np.float32)
        return out

    return inputs


@dataclass
class TaskRun:
    """What :func:`run_experience_task` wrote (``results`` is None when no test day is materialised)."""

    test_days: int
    note: str
    methods: list[str]
    targets: int = 0
    results: pl.DataFrame | None = None


def run_experience_task(s: Settings, lake: Lake, cal: TradingCalendar) -> TaskRun:
    """The experience task on the test split's materialised days: each method's scores (written
    per day as experience_task_scores) and seed 002 Tables 1, 2 and 6 (written as experience_task).
    Pipe+ToE(llm) runs with an LLM reader backend only; the ToE methods need the prior tree."""
    days = split_days(s, cal, lake, "test")
    if not days:  # a range before the test split (a short demo): nothing to evaluate, said so
        lake.write("experience_task", pl.from_arrow(lake.spec("experience_task").schema.empty_table()))
        return TaskRun(0, f"no materialised anchors in the test split ({s.splits.test[0]} .. {s.splits.test[1]}): nothing evaluated", [])
    prices = lake.read("prices")
    market = s.market_ticker
    daily = sector_returns(prices, lake.read("universe"), market)
    sessions = [d for d in cal.sessions_in_range(s.calendar.start, s.calendar.end)]
    tdays = [dt.date.fromisoformat(d) for d in days]
    alphas = excess_returns(daily, market, sessions, tdays)
    prior = None
    if lake.exists("experience_tree", tree_id=TREE_ID, date=days[0]):
        prior = read_tree(lake, TREE_ID, days[0], ToEParams.from_settings(s))
    methods, llm_fn, note = list(METHODS[:5]), None, ""
    if s.reader.backend != "embedded":
        from ..experience.llm import llm_update
        from ..reader.backends import BackendConfig, make_backend

        backend = make_backend(BackendConfig.from_settings(s))
        methods.append("Pipe+ToE(llm)")
        llm_fn = lambda tree, leaf_id, h, score, a: llm_update(tree, backend, leaf_id, h, score, a)  # noqa: E731
    else:
        note = "Pipe+ToE(llm) needs an LLM reader backend (settings.reader.backend); not run with the embedded reader."
    if prior is None:
        methods = [m for m in methods if not m.startswith("Pipe+ToE")]
        note += " No prior experience tree on the first test day: the ToE methods were not run."
    scores = run_task(
        tdays,
        task_inputs(s, lake, cal, days, set(prices["ticker"].unique().to_list())),
        alphas,
        prior=prior,
        methods=methods,
        params=s.experience,
        llm_update=llm_fn,
    )
    for d in days:
        lake.write("experience_task_scores", scores.filter(pl.col("date") == dt.date.fromisoformat(d)).drop("date"), date=d)
    res = result_tables(scores)
    lake.write("experience_task", res)
    return TaskRun(len(days), note.strip() or "all methods run", methods, scores["target"].n_unique() if scores.height else 0, res)


# ------------------------------------------------------------------ its tables
def _in_method_order(res: pl.DataFrame) -> pl.DataFrame:
    order = {m: i for i, m in enumerate([*METHODS, "Pipe+formula", "Pipe+llm"])}
    return res.with_columns(pl.col("method").replace_strict(order, default=len(order), return_dtype=pl.Int32).alias("_o")).sort(
        "_o", maintain_order=True
    )


def task_rows(
    res: pl.DataFrame, table: str, cell: Callable[[float | None], str], metrics: list[str] | None = None
) -> tuple[list[str], list[list[str]]]:
    """(columns, rows) of one of the task's result tables: methods × horizons (Tables 1 and 6), or
    update strategies × ``metrics`` (Table 2; default: the metrics in the table's row order)."""
    g = _in_method_order(res.filter(pl.col("table") == table))

    def value(m: str, col: str, key: str) -> str:
        v = g.filter((pl.col("method") == m) & (pl.col(col) == key))["value"]
        return cell(v[0]) if len(v) and v[0] is not None else "–"

    if table == "Table 2":
        keys = metrics or list(dict.fromkeys(g["metric"].to_list()))
        return ["strategy", *keys], [[m, *[value(m, "metric", k) for k in keys]] for m in dict.fromkeys(g["method"].to_list())]
    hs = [h for h in HKEYS if h in set(g["horizon"].to_list())]
    return ["method", *hs], [[m, *[value(m, "horizon", h) for h in hs]] for m in dict.fromkeys(g["method"].to_list())]


def task_md(res: pl.DataFrame, table: str) -> str:
    """A results table of the task as markdown."""
    if res.filter(pl.col("table") == table).height == 0:
        return "_empty_"
    return md_table(*task_rows(res, table, lambda v: f"{v:.4f}"))


def task_tables(lake: Lake) -> list[dict]:
    """The experience task's seed 002 Tables 1, 6 (methods × horizons) and 2 (update strategy), for the report."""
    if not lake.partition_files("experience_task"):
        return []
    res = lake.read("experience_task")
    out = []
    for table, metric, title in (
        ("Table 1", "tsIC", "Experience task (seed 002 Table 1): tsIC by horizon, test split, sector targets"),
        ("Table 6", "csIC", "Experience task (seed 002 Table 6): csIC by horizon, test split, sector targets"),
    ):
        columns, rows = task_rows(res, table, fmt)
        out.append(
            {
                "title": title,
                "columns": columns,
                "rows": rows,
                "note": f"{metric}: Pearson correlation of scores with the realised excess return (eqs 21-24).",
            }
        )
    if res.filter(pl.col("table") == "Table 2").height:
        columns, rows = task_rows(res, "Table 2", fmt, ["tsIC", "csIC"])
        out.append({"title": "Experience task (seed 002 Table 2): update strategy at 20 days", "columns": columns, "rows": rows})
    return out


def tree_tables(s: Settings, lake: Lake, max_rows: int = 24) -> list[dict]:
    """The last experience-tree snapshot of each tree (the induced prior and each toe variant):
    its most recalled principles with Q per horizon (seed 002 Table 5's shape)."""
    out = []
    for tree_id in sorted({p.parent.parent.name.split("=", 1)[1] for p in lake.partition_files("experience_tree")}):
        days = lake.materialized_dates("experience_tree", tree_id=tree_id)
        if not days:
            continue
        tree = read_tree(lake, tree_id, days[-1], ToEParams.from_settings(s))
        leaves = sorted(tree.leaves(), key=lambda x: (-x.n_recall, x.leaf_id))
        if not leaves:
            continue
        hs = list(tree.params.horizons)
        rows = [
            [x.factor, x.principle[:140], *[f"{x.q[h]:.3f}" for h in hs], f"{x.n_recall}/{x.n_hit}", x.support, x.leaf_id] for x in leaves[:max_rows]
        ]
        out.append(
            {
                "title": f"Experience tree `{tree_id}` on {days[-1]} (seed 002 Table 5 shape)",
                "columns": ["factor", "principle", *[f"Q {h}" for h in hs], "recall/hit", "support", "id"],
                "rows": rows,
                "note": f"{len(tree.factors)} factors, {len(leaves)} principles; the {min(max_rows, len(leaves))} most recalled shown. "
                f"Q in [0, {2 * tree.params.q0:g}], neutral {tree.params.q0:g}.",
            }
        )
    return out
