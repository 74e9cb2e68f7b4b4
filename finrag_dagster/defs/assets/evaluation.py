"""Evaluation you can show: seed 000 Tables 2/3/4 (test split), Table 6 (validation) and the report."""

import datetime as dt
import math

import dagster as dg
import polars as pl

from ...core.calendar import TradingCalendar
from ...core.evaluation import report as R
from ...core.evaluation.sensitivity import grid, run_setting, select
from ...core.evaluation.tables import MAIN_VARIANTS, VARIANT_LABEL, _rows, daily_returns, family_metrics, portfolio_books, summary
from ...core.lake import Lake
from ...core.loop import variants_of
from ...core.reader.backends import make_backend
from ...core.settings import Settings
from ..resources import FinragResource
from .variants import backend_config, build_env, memory_params

METRICS = ["Non-neutral F1", "Macro-F1", "1D Macro-F1", "3D Macro-F1", "5D Macro-F1", "Rank IC"]
PORTFOLIO = ["Ann. Ret.", "Ann. Vol.", "Sharpe", "Max DD", "Turnover"]


def split_days(s: Settings, cal: TradingCalendar, lake: Lake, name: str) -> list[str]:
    """Materialised decision days of a split (reader outputs of no_memory exist)."""
    b = {"train": s.splits.train, "validation": s.splits.validation, "test": s.splits.test}[name]
    have = set(lake.materialized_dates("anchors"))
    return [d.isoformat() for d in cal.sessions_in_range(*b) if d.isoformat() in have]


def table_cells(df: pl.DataFrame, rows: list[str], cols: list[str], pct=frozenset()) -> list[list[str]]:
    """[row label, formatted value (± std over seeds) per metric] from the long-form evaluation table."""
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
            line.append(R.fmt(v, c in pct) + (f" ± {R.fmt(sd, c in pct)}" if sd is not None and not math.isnan(sd) else ""))
        out.append(line)
    return out


def md_table(df: pl.DataFrame, rows: list[str], cols: list[str], pct: set[str] = frozenset()) -> str:
    lines = ["| | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(line) + " |" for line in table_cells(df, rows, cols, pct)]
    return "\n".join(lines)


def evaluate(s: Settings, lake: Lake, cal: TradingCalendar) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows, daily = [], []
    uni = lake.read("universe")
    market = s.market_ticker
    for split in ("validation", "test"):
        days = split_days(s, cal, lake, split)
        if not days:
            continue
        fams = [f for f in s.variants.families if lake.exists("reader_outputs", variant=variants_of(f, 0.3, s.variants.shuffle_seeds)[0].name, date=days[-1])]
        for f in fams:
            names = [v.name for v in variants_of(f, s.memory.lam, s.variants.shuffle_seeds)]
            mean, std, n = family_metrics(lake, f, names, days)
            label = VARIANT_LABEL.get(f, f)
            if f in MAIN_VARIANTS:
                rows += _rows("Table 2", split, label, mean, n)
            if f in MAIN_VARIANTS[2:]:
                continue  # Table 3 is the source memory's validity checks
            rows += _rows("Table 3", split, label, {k: mean[k] for k in ("Non-neutral F1", "Macro-F1", "Rank IC")}, n,
                          {k: std[k] for k in ("Non-neutral F1", "Macro-F1", "Rank IC")} if len(names) > 1 else None)
        strat = [f for f in MAIN_VARIANTS if f in fams]
        books = portfolio_books(lake, strat, days, market, uni["ticker"].to_list())
        for name, b in books.items():
            label = VARIANT_LABEL.get(name, name)
            rows += _rows("Table 4", split, label, summary(b), b.height)
            daily.append(b.with_columns(pl.lit(label).alias("strategy"), pl.lit(split).alias("split"),
                                        (pl.col("net") + 1).cum_prod().sub(1).alias("cum_net")))
    ev = pl.DataFrame(rows, schema={"table": pl.Utf8, "split": pl.Utf8, "row": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64, "std": pl.Float64, "n": pl.Int64})
    pdaily = pl.concat(daily) if daily else pl.DataFrame()
    return ev, pdaily


def table2_rows(ev: pl.DataFrame) -> list[str]:
    """Table 2's rows in order: the main variants that were evaluated."""
    have = set(ev.filter(pl.col("table") == "Table 2")["row"].to_list())
    return [VARIANT_LABEL[f] for f in MAIN_VARIANTS if VARIANT_LABEL[f] in have] or [VARIANT_LABEL["no_memory"], VARIANT_LABEL["source_memory"]]


def build_evaluation_assets(s: Settings) -> list[dg.AssetsDefinition]:
    fam_outputs = [dg.AssetKey([f, "reader_outputs"]) for f in s.variants.families]

    @dg.asset(
        name="evaluation",
        group_name="evaluation",
        kinds={"parquet", "scikit-learn"},
        deps=["stock_day_signals", "labels", "table1_audit", "returns", *fam_outputs],
        description=(
            "seed 000 Table 2 (event-level quality per variant), Table 3 (validity checks, mean +- std over the "
            "shuffles) and Table 4 (the 3D portfolio diagnostic, 10 bps turnover cost, vs QQQ and the equal-weight "
            "universe) on the validation and test splits; daily books in portfolio_daily."
        ),
    )
    def evaluation(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s2 = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        ev, daily = evaluate(s2, lake, cal)
        lake.write("evaluation", ev)
        for d in sorted(set(daily["date"].to_list())) if daily.height else []:
            lake.write("portfolio_daily", daily.filter(pl.col("date") == d).drop("date"), date=d)
        test = ev.filter(pl.col("split") == "test")
        t2 = md_table(test.filter(pl.col("table") == "Table 2"), table2_rows(test), METRICS)
        t4 = md_table(test.filter(pl.col("table") == "Table 4"), sorted(set(test.filter(pl.col("table") == "Table 4")["row"].to_list())), PORTFOLIO, {"Ann. Ret.", "Ann. Vol.", "Max DD"})
        return dg.MaterializeResult(metadata={
            "table_2_test": dg.MetadataValue.md(t2), "table_4_test": dg.MetadataValue.md(t4), "rows": ev.height,
            "report": dg.MetadataValue.path(str(report_path(s2))),
        })

    @dg.asset(
        name="sensitivity",
        group_name="evaluation",
        kinds={"parquet"},
        deps=["candidates", "anchors", "context_cards", "labels", "returns"],
        description="seed 000 Table 6: lambda in {0,.1,.2,.3,.5} at delta=.2 and delta in {.05,.1,.15,.2,.3} at lambda=.3, source memory re-run on the validation split, scored on the labels matured before the test split starts; the selection rule picks the best non-neutral F1, then Sharpe, and the test split runs with it (memory.test_params = selected). Runs before the loop.",
    )
    def sensitivity(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s2 = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        days = split_days(s2, cal, lake, "validation")
        if not days:
            lake.write("sensitivity", pl.DataFrame(schema={"table": pl.Utf8, "split": pl.Utf8, "row": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64, "std": pl.Float64, "n": pl.Int64}))
            return dg.MaterializeResult(metadata={"note": "no validation days materialised"})
        bcfg = backend_config(s2)
        env = build_env(s2, lake, cal, days, make_backend(bcfg), memory_params(s2), bcfg.decoding())
        # the selection is used from the test split's first session (whether or not its anchors are
        # in the lake yet): only labels matured before that session count
        test_sessions = cal.sessions_in_range(*s2.splits.test)
        test_start = test_sessions[0] if test_sessions else cal.offset(days[-1], 1)
        test_days = [test_start.isoformat()]
        labels = lake.read("labels", dates=days)
        n_all = labels.height
        labels = labels.filter(pl.col("maturity_day") < test_start)
        rets = daily_returns(lake, days, [])
        results, rows = [], []
        for kind, lam, delta in grid(s2.memory.lam, s2.memory.delta):
            m = run_setting(env, days, lam, delta, s2.memory.kappa, labels, rets)
            m.update({"kind": kind, "lambda": lam, "delta": delta})
            results.append(m)
            rows += _rows("Table 6", "validation", f"{kind}: lambda={lam:.2f} delta={delta:.2f}",
                          {k: m[k] for k in ("Non-neutral F1", "Macro-F1", "Rank IC", "Sharpe")}, m["n"])
        best = select(results)
        rows += _rows("Table 6", "validation", "selected", {"lambda": best["lambda"], "delta": best["delta"]}, best["n"])
        df = pl.DataFrame(rows, schema={"table": pl.Utf8, "split": pl.Utf8, "row": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64, "std": pl.Float64, "n": pl.Int64})
        lake.write("sensitivity", df)
        return dg.MaterializeResult(metadata={
            "selected_lambda": best["lambda"], "selected_delta": best["delta"],
            "used_for_test": (f"lambda={best['lambda']}, delta={best['delta']} (memory.test_params = selected)" if s2.memory.test_params == "selected"
                              else f"lambda={s2.memory.lam}, delta={s2.memory.delta} (memory.test_params = settings)"),
            "labels_used": f"{labels.height} of {n_all} validation label rows (those matured before {test_days[0]})",
            "table_6": dg.MetadataValue.md(md_table(df, sorted(set(df["row"].to_list()) - {"selected"}), ["Non-neutral F1", "Macro-F1", "Rank IC", "Sharpe"])),
        })

    @dg.asset(
        name="report",
        group_name="evaluation",
        kinds={"html"},
        deps=["evaluation", "sensitivity", "table1_audit", "experience_task"],
        description="Self-contained HTML report: Tables 1-4 and 6, cumulative net returns (Figure 2), source-memory utilities over time, label mix, citation validity; the experience trees and the experience task's tsIC/csIC tables.",
    )
    def report(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s2 = finrag.settings()
        path = write_report(s2, finrag.lake())
        ev = finrag.lake().read("evaluation").filter((pl.col("split") == "test") & (pl.col("table") == "Table 4") & (pl.col("metric") == "Sharpe"))
        return dg.MaterializeResult(metadata={"path": dg.MetadataValue.path(str(path)), "url": dg.MetadataValue.url(path.resolve().as_uri()),
                                              **{f"Sharpe {r}": v for r, v in zip(ev["row"], ev["value"]) if v is not None}})

    return [evaluation, sensitivity, report]


def report_path(s: Settings):
    return s.lake_dir.parent / "reports" / "finrag_report.html"


def _table(df: pl.DataFrame, title: str, rows: list[str], cols: list[str], pct=frozenset(), note: str = "") -> dict:
    return {"title": title, "columns": ["", *cols], "rows": table_cells(df, rows, cols, pct), "note": note}


def task_tables(lake: Lake) -> list[dict]:
    """The experience task's seed 002 Tables 1, 6 (methods × horizons) and 2 (update strategy)."""
    if not lake.partition_files("experience_task"):
        return []
    from ...core.experience_task import HKEYS, METHODS

    res = lake.read("experience_task")
    order = {m: i for i, m in enumerate([*METHODS, "Pipe+formula", "Pipe+llm"])}
    res = res.with_columns(pl.col("method").replace_strict(order, default=len(order), return_dtype=pl.Int32).alias("_o")).sort("_o", maintain_order=True)
    out = []
    for table, metric, title in (("Table 1", "tsIC", "Experience task (seed 002 Table 1): tsIC by horizon, test split, sector targets"),
                                 ("Table 6", "csIC", "Experience task (seed 002 Table 6): csIC by horizon, test split, sector targets")):
        g = res.filter(pl.col("table") == table)
        hs = [h for h in HKEYS if h in set(g["horizon"].to_list())]
        rows = [[m, *[R.fmt(v[0]) if len(v := g.filter((pl.col("method") == m) & (pl.col("horizon") == h))["value"]) and v[0] is not None else "–" for h in hs]]
                for m in dict.fromkeys(g["method"].to_list())]
        out.append({"title": title, "columns": ["method", *hs], "rows": rows, "note": f"{metric}: Pearson correlation of scores with the realised excess return (eqs 21-24)."})
    g = res.filter(pl.col("table") == "Table 2")
    if g.height:
        rows = [[m, *[R.fmt(v[0]) if len(v := g.filter((pl.col("method") == m) & (pl.col("metric") == k))["value"]) and v[0] is not None else "–" for k in ("tsIC", "csIC")]]
                for m in dict.fromkeys(g["method"].to_list())]
        out.append({"title": "Experience task (seed 002 Table 2): update strategy at 20 days", "columns": ["strategy", "tsIC", "csIC"], "rows": rows})
    return out


def tree_tables(s: Settings, lake: Lake, max_rows: int = 24) -> list[dict]:
    """The last experience-tree snapshot of each tree (the induced prior and each toe variant):
    its most recalled principles with Q per horizon (seed 002 Table 5's shape)."""
    from ...core.memory.experience_store import read_tree
    from .experience import toe_params

    out = []
    root = lake.root / "experience_tree"
    for tree_id in sorted(p.name.split("=", 1)[1] for p in root.glob("tree_id=*")) if root.exists() else []:
        days = sorted(p.name.split("=", 1)[1] for p in (root / f"tree_id={tree_id}").glob("date=*"))
        if not days:
            continue
        tree = read_tree(lake, tree_id, days[-1], toe_params(s))
        leaves = sorted(tree.leaves(), key=lambda x: (-x.n_recall, x.leaf_id))
        if not leaves:
            continue
        hs = list(tree.params.horizons)
        rows = [[x.factor, x.principle[:140], *[f"{x.q[h]:.3f}" for h in hs], f"{x.n_recall}/{x.n_hit}", x.support, x.leaf_id] for x in leaves[:max_rows]]
        out.append({"title": f"Experience tree `{tree_id}` on {days[-1]} (seed 002 Table 5 shape)",
                    "columns": ["factor", "principle", *[f"Q {h}" for h in hs], "recall/hit", "support", "id"], "rows": rows,
                    "note": f"{len(tree.factors)} factors, {len(leaves)} principles; the {min(max_rows, len(leaves))} most recalled shown. Q in [0, {2 * tree.params.q0:g}], neutral {tree.params.q0:g}."})
    return out


def write_report(s: Settings, lake: Lake):
    ev = lake.read("evaluation") if lake.partition_files("evaluation") else pl.DataFrame(schema={"table": pl.Utf8, "split": pl.Utf8, "row": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64, "std": pl.Float64})
    sens = lake.read("sensitivity") if lake.partition_files("sensitivity") else ev.head(0)
    t1 = lake.read("table1_audit") if (lake.root / "table1_audit").exists() else pl.DataFrame()
    test = ev.filter(pl.col("split") == "test")
    tables = []
    if t1.height:
        tables.append({"title": "Table 1. Benchmark audit and split usage", "columns": ["split", "days", "#anchors", "anchors/day", "active ticker-days", "SEC cov.", "1D +1/0/-1", "3D +1/0/-1", "5D +1/0/-1"],
                       "rows": [[r["split"], f"{r['first_day']}..{r['last_day']}", r["anchors"], R.fmt(r["anchors_per_day"]), r["active_ticker_days"], R.fmt(r["sec_coverage"], True),
                                 *["/".join(R.fmt(r[f"{k}_{h}"], True) for k in ("pos", "zero", "neg")) for h in ("1d", "3d", "5d")]] for r in t1.sort("split_order").iter_rows(named=True)],
                       "note": "SEC cov. = share of anchors whose candidate pool holds at least one SEC passage; label mix over the anchors' ticker-days."})
    tables.append(_table(test.filter(pl.col("table") == "Table 2"), "Table 2. Event-level prediction quality (test split)", table2_rows(test), METRICS))
    t3rows = [VARIANT_LABEL[f] for f in ("no_memory", "source_memory", "top5_all_source", "shuffled_labels", "shuffled_event_types")]
    tables.append(_table(test.filter(pl.col("table") == "Table 3"), "Table 3. Source-memory validity checks (test split, mean ± std over shuffles)", t3rows, ["Non-neutral F1", "Macro-F1", "Rank IC"]))
    t4rows = sorted(set(test.filter(pl.col("table") == "Table 4")["row"].to_list()))
    tables.append(_table(test.filter(pl.col("table") == "Table 4"), "Table 4. Portfolio diagnostic from 3D stock-day signals (test split, net of 10 bps turnover cost)", t4rows, PORTFOLIO, {"Ann. Ret.", "Ann. Vol.", "Max DD"}))
    srows = [r for r in dict.fromkeys(sens["row"].to_list()) if r != "selected"] if sens.height else []
    sel = sens.filter(pl.col("row") == "selected")
    note = ""
    if sel.height:
        lam = sel.filter(pl.col("metric") == "lambda")["value"][0]
        dl = sel.filter(pl.col("metric") == "delta")["value"][0]
        used = (f"the test split above ran with it (memory.test_params = selected)" if s.memory.test_params == "selected"
                else f"the test split above ran with lambda={s.memory.lam}, delta={s.memory.delta} (memory.test_params = settings)")
        note = f"selected on validation (labels matured before the test split): lambda={lam:.2f}, delta={dl:.2f}; {used}."
    tables.append(_table(sens, "Table 6. Validation sensitivity to source-memory strength", srows, ["Non-neutral F1", "Macro-F1", "Rank IC", "Sharpe"], note=note))
    tables += task_tables(lake)
    tables += tree_tables(s, lake)
    daily = lake.read("portfolio_daily") if lake.partition_files("portfolio_daily") else pl.DataFrame()
    snap = lake.read("memory_snapshot", variant="source_memory") if lake.partition_files("memory_snapshot", variant="source_memory") else pl.DataFrame()
    figures = [
        {"title": "Figure 2. Cumulative net returns, test split", "png": R.cumulative_figure(daily, "test") if daily.height else None},
        {"title": "Source-memory utilities over time (source_memory variant)", "png": R.memory_heatmap(snap), "note": "û per cell at the end of each week; resets at each split start."},
        {"title": "Label mix per split", "png": R.label_mix_figure(t1) if t1.height else None},
        {"title": "Valid-citation rate per month", "png": R.citation_figure(R.valid_citation_by_month(lake, sorted({p.parent.parent.name.split('=', 1)[1] for p in lake.partition_files('reader_outputs')})))},
    ]
    st = s.splits
    notes = [R.universe_note(s.sources.membership) if s.sources.kind == "files"
             else "Universe: the embedded world's companies, each listed over the whole calendar."]
    return R.render(lake, report_path(s), {"train": st.train, "validation": st.validation, "test": st.test}, tables, figures, notes)
