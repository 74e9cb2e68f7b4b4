"""The Tree-of-Experience snapshot per trading day (seed 002 §4.2).

A thin asset over core/memory/experience_*.py: the pure induction builds the tree, the pure
serialisation splits it into the daily state and the content written once, the pure renderer
draws it for the UI.
"""


import datetime as dt

import dagster as dg
import polars as pl

from ...core.anchors import anchors_for_days
from ...core.calendar import lookback_days
from ...core.calendar import TradingCalendar
from ...core.embeddings import embed
from ...core.lake import Lake
from ...core.memory.experience_induction import InductionParams, InductionReport, induce_tree
from ...core.memory.experience_llm import llm_rewriter
from ...core.memory.experience_store import known_before, read_tree, write_rows
from ...core.memory.experience_tree import ExperienceTree, ToEParams, render_markdown, to_table
from ...core.settings import Settings
from ..context import days_of
from ..resources import FinragResource
from .evidence import require_partitions

TREE_ID = "prior"  # the induced tree without utility updates; the toe variants add their own


def toe_params(s: Settings) -> ToEParams:
    e = s.experience
    return ToEParams(k1=e.k1, leaf_threshold=e.leaf_threshold, q0=e.q0, eta=e.eta, horizons=tuple(e.horizons))


def induction_day(s: Settings, cal: TradingCalendar) -> str | None:
    """The day the tree is induced: the last session of the train split (inside the calendar)."""
    a, b = s.splits.train
    days = cal.sessions_in_range(max(a, s.calendar.start), min(b, s.calendar.end))
    return days[-1].isoformat() if days else None


def train_days_before(s: Settings, cal: TradingCalendar, day: str) -> list[str]:
    """Sessions of the train split (inside the calendar) strictly before ``day``."""
    a, b = s.splits.train
    return [d.isoformat() for d in cal.sessions_in_range(max(a, s.calendar.start), min(b, s.calendar.end)) if d.isoformat() < day]


def historical_anchors(s: Settings, lake: Lake, cal: TradingCalendar, days: list[str]) -> pl.DataFrame:
    """Anchors of ``days`` rebuilt with the anchors asset's own pure function from news_raw and
    evidence, so the tree does not depend on which days the decision range covers."""
    if not days:
        return pl.DataFrame()
    require_partitions(lake, "news_raw", days)
    window = lookback_days(cal, days[0], s.evidence.dup_lookback_sessions, s.calendar.start) + days
    require_partitions(lake, "evidence", window)
    uni = lake.read("universe")
    sectors = dict(zip(uni["ticker"], uni["sector"]))
    bench = set(uni.filter(pl.col("is_benchmark"))["ticker"].to_list())
    clusters = lake.read("evidence", dates=window, columns=["passage_id", "ticker", "dup_cluster"])
    news = lake.read("news_raw", dates=days)
    membership = lake.read("membership") if s.sources.membership else None
    built = anchors_for_days(news, clusters, days, cal, bench, sectors, s.evidence.dup_lookback_sessions,
                             s.calendar.start, membership)
    parts = [built[d][0] for d in days]
    return pl.concat(parts) if parts else pl.DataFrame()


def company_names(lake: Lake) -> dict[str, list[str]]:
    uni = lake.read("universe")
    return {t: [c, *[a for a in (al or "").split("|") if a]] for t, c, al in zip(uni["ticker"], uni["company"], uni["aliases"])}


def induce(s: Settings, lake: Lake, cal: TradingCalendar, day: str) -> tuple[ExperienceTree, InductionReport]:
    """The induced tree used on ``day``: from train-split anchors decided strictly before ``day``."""
    e = s.experience
    anchors = historical_anchors(s, lake, cal, train_days_before(s, cal, day))
    mode = e.induction if e.induction != "auto" else ("rule" if s.reader.backend == "embedded" else "llm")
    rewrite = None
    if mode == "llm" and anchors.height:
        from ...core.reader.backends import make_backend
        from .variants import backend_config

        rewrite = llm_rewriter(make_backend(backend_config(s)))  # raises LLMBackendRequired for the embedded reader
    ev = s.evidence
    return induce_tree(
        anchors,
        lambda texts: embed(texts, ev.embed_batch_size, ev.embed_max_seq_length),
        toe_params(s),
        InductionParams(e.cluster_threshold, e.min_support, e.max_leaves_per_factor),
        names=company_names(lake),
        rewrite=rewrite,
    )


def schema_check(lake: Lake, days: list[str]) -> dg.AssetCheckResult:
    """Every written state and content partition of ``days`` carries exactly its declared schema."""
    import pyarrow.parquet as pq

    spec, content = lake.spec("experience_tree"), lake.spec("experience_leaves")
    bad = [d for d in days if not (f := lake.path("experience_tree", tree_id=TREE_ID, date=d)).exists()
           or not pq.read_schema(f).remove_metadata().equals(spec.schema)
           or ((c := lake.path("experience_leaves", tree_id=TREE_ID, date=d)).exists()
               and not pq.read_schema(c).remove_metadata().equals(content.schema))]
    return dg.AssetCheckResult(check_name="schema", passed=not bad,
                               metadata={"partitions_checked": len(days), "failing": ", ".join(bad[:10]) or "none"})


def build_experience_tree_asset(partitions_def) -> dg.AssetsDefinition:
    @dg.asset(
        name="experience_tree",
        group_name="experience",
        kinds={"parquet"},
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=[
            dg.AssetDep("experience_tree", partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1, allow_nonexistent_upstream_partitions=True)),
            "news_raw", "evidence", "universe",
        ],
        description=(
            "Tree-of-Experience snapshot used on decision day D (seed 002 §4.2, Table 5), one row per leaf: "
            "factor -> analytical principle, Q per horizon, recall/hit. Stored as the day's state (experience_tree: "
            "position, id, Q, recall/hit) and the content written once (experience_leaves, dated the day a position's "
            "factor, principle and embedding first appeared); the tree of D reads content dated <= D only. On the "
            "induction day (the last session of the train split) the tree is induced (eqs 3-5) from train-split "
            "anchors decided before that day only (rebuilt from news_raw/evidence with the anchors rule; rule skeletons clustered by MiniLM cosine, or LLM "
            "rewrites with an LLM reader); Q_init = q0. Afterwards snapshot(D) = snapshot(D-1): there are no utility "
            "updates here — updates from matured feedback come with the toe variants (`toe/experience_tree`). Days before "
            "the induction day hold an empty snapshot (no tree yet)."
        ),
        check_specs=[dg.AssetCheckSpec("schema", asset="experience_tree")],
    )
    def experience_tree(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        """Snapshot D = induction on the induction day, else snapshot D-1 (no updates yet: part 3).

        When D-1 is not materialised (a range starting after the induction day) the induction is
        re-run for D; it reads the same train anchors, so it is the same tree the chain would carry.
        """
        s = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        params = toe_params(s)
        first = induction_day(s, cal)
        tree: ExperienceTree | None = None
        report: InductionReport | None = None
        kinds = {"empty": 0, "induced": 0, "carried": 0}
        known, content_rows = known_before(lake, TREE_ID, days[0]), 0
        for d in days:
            if first is None or d < first:
                tree = None
                known, _ = write_rows(lake, TREE_ID, d, to_table(ExperienceTree([], params)), known)
                kinds["empty"] += 1
                continue
            if tree is None:
                prev = cal.offset(d, -1).isoformat()
                if d > first and lake.exists("experience_tree", tree_id=TREE_ID, date=prev):
                    tree = read_tree(lake, TREE_ID, prev, params)
                    kinds["carried"] += 1
                else:
                    tree, report = induce(s, lake, cal, first)
                    kinds["induced"] += 1
            else:
                kinds["carried"] += 1
            known, n = write_rows(lake, TREE_ID, d, to_table(tree), known)
            content_rows += n
        meta = {
            "tree_id": TREE_ID,
            "induction_day": first or "none (no train split inside the calendar)",
            "partitions": dg.MetadataValue.json(kinds),
            "content_rows_written": content_rows,
            "path": dg.MetadataValue.path(str(lake.root / "experience_tree")),
        }
        if tree is not None:
            meta["factors"] = len(tree.factors)
            meta["principles"] = len(tree.leaves())
            meta["tree"] = dg.MetadataValue.md(render_markdown(tree, f"experience tree `{TREE_ID}` on {days[-1]}"))
        else:
            meta["tree"] = dg.MetadataValue.md(render_markdown(ExperienceTree([], params), f"experience tree `{TREE_ID}` on {days[-1]}"))
        if report is not None:
            meta["induction"] = dg.MetadataValue.json(report.as_dict())
        return dg.MaterializeResult(
            metadata=meta,
            check_results=[schema_check(lake, days)],
        )

    return experience_tree


# ------------------------------------------------------------------ the experience task
def task_inputs(s: Settings, lake: Lake, cal: TradingCalendar, days: list[str], priced: set[str] | None = None):
    """A function day -> [DayInput per sector target] over news of decision days T-4..T, the
    digests embedded in one MiniLM call per day. Targets: sectors with a member in ``priced``
    (tickers with prices; None: every member)."""
    import numpy as np

    from ...core.experience_task import WINDOW, DayInput, digest

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


def build_experience_task_asset() -> dg.AssetsDefinition:
    @dg.asset(
        name="experience_task",
        group_name="experience",
        kinds={"parquet"},
        deps=["anchors", "news_raw", "prices", "universe", "experience_tree"],
        description=(
            "The experience task of seed 002 (FinEvolveBench protocol, US version) on the test split: sector targets "
            "(equal-weight sector returns), scores in [-1, 1] for h in {1, 5, 10, 20} from the news of days T-4..T, "
            "outcome alpha = sector return - QQQ return released only after maturity; Baseline, Pipe, Pipe+mem0, "
            "Pipe+MemRL, Pipe+ToE (formula) and Pipe+ToE (LLM, with an LLM reader); tsIC (Table 1), csIC (Table 6) "
            "and the update-strategy ablation (Table 2). Scores in experience_task_scores."
        ),
    )
    def experience_task(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        from ...core.experience_task import METHODS, excess_returns, result_tables, run_task, sector_returns
        from .evaluation import split_days

        s = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        days = split_days(s, cal, lake, "test")
        if not days:  # a range before the test split (a short demo): nothing to evaluate, said so
            lake.write("experience_task", pl.from_arrow(lake.spec("experience_task").schema.empty_table()))
            return dg.MaterializeResult(metadata={
                "test_days": 0,
                "note": f"no materialised anchors in the test split ({s.splits.test[0]} .. {s.splits.test[1]}): nothing evaluated",
            })
        prices = lake.read("prices")
        market = s.market_ticker
        daily = sector_returns(prices, lake.read("universe"), market)
        sessions = [d for d in cal.sessions_in_range(s.calendar.start, s.calendar.end)]
        tdays = [dt.date.fromisoformat(d) for d in days]
        alphas = excess_returns(daily, market, sessions, tdays)
        prior = None
        if lake.exists("experience_tree", tree_id=TREE_ID, date=days[0]):
            prior = read_tree(lake, TREE_ID, days[0], toe_params(s))
        methods, llm_fn, note = list(METHODS[:5]), None, ""
        if s.reader.backend != "embedded":
            from ...core.memory.experience_llm import llm_update
            from ...core.reader.backends import make_backend
            from .variants import backend_config

            backend = make_backend(backend_config(s))
            methods.append("Pipe+ToE(llm)")
            llm_fn = lambda tree, leaf_id, h, score, a: llm_update(tree, backend, leaf_id, h, score, a)  # noqa: E731
        else:
            note = "Pipe+ToE(llm) needs an LLM reader backend (settings.reader.backend); not run with the embedded reader."
        if prior is None:
            methods = [m for m in methods if not m.startswith("Pipe+ToE")]
            note += " No prior experience tree on the first test day: the ToE methods were not run."
        scores = run_task(tdays, task_inputs(s, lake, cal, days, set(prices["ticker"].unique().to_list())), alphas, prior, methods, s.experience.expansion_cap, llm_fn,
                          s.experience.q0, s.experience.eta)
        for d in days:
            lake.write("experience_task_scores", scores.filter(pl.col("date") == dt.date.fromisoformat(d)).drop("date"), date=d)
        res = result_tables(scores)
        lake.write("experience_task", res)
        return dg.MaterializeResult(metadata={
            "test_days": len(days), "targets": scores["target"].n_unique() if scores.height else 0, "methods": ", ".join(methods),
            "note": note.strip() or "all methods run",
            "table_1_tsIC": dg.MetadataValue.md(task_md(res, "Table 1")),
            "table_6_csIC": dg.MetadataValue.md(task_md(res, "Table 6")),
            "table_2_update": dg.MetadataValue.md(task_md(res, "Table 2")),
        })

    return experience_task


def task_md(res: pl.DataFrame, table: str) -> str:
    """A results table as markdown: methods × horizons."""
    g = res.filter(pl.col("table") == table)
    if g.height == 0:
        return "_empty_"
    from ...core.experience_task import HKEYS, METHODS

    hs = [h for h in HKEYS if h in set(g["horizon"].to_list())]
    order = {m: i for i, m in enumerate([*METHODS, "Pipe+formula", "Pipe+llm"])}
    g = g.with_columns(pl.col("method").replace_strict(order, default=len(order), return_dtype=pl.Int32).alias("_o")).sort("_o", maintain_order=True)
    lines = ["| method | " + " | ".join(hs) + " |"]
    metrics = list(dict.fromkeys(g["metric"].to_list()))
    if table == "Table 2":
        lines = ["| strategy | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
        for m in dict.fromkeys(g["method"].to_list()):
            vals = [g.filter((pl.col("method") == m) & (pl.col("metric") == k))["value"] for k in metrics]
            lines.append(f"| {m} | " + " | ".join(f"{v[0]:.4f}" if len(v) and v[0] is not None else "–" for v in vals) + " |")
        return "\n".join(lines)
    lines.append("|---|" + "---|" * len(hs))
    for m in dict.fromkeys(g["method"].to_list()):
        vals = [g.filter((pl.col("method") == m) & (pl.col("horizon") == h))["value"] for h in hs]
        lines.append(f"| {m} | " + " | ".join(f"{v[0]:.4f}" if len(v) and v[0] is not None else "–" for v in vals) + " |")
    return "\n".join(lines)
