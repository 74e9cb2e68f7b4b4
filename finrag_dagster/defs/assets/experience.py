"""The Tree-of-Experience snapshot per trading day (seed 002 §4.2; issue 7 part 1).

A thin asset over core/memory/experience_*.py: the pure induction builds the tree, the pure
serialisation writes it, the pure renderer draws it for the UI.
"""


import datetime as dt

import dagster as dg
import polars as pl

from ...core.anchors import build_anchors
from ...core.calendar import TradingCalendar
from ...core.embeddings import embed
from ...core.lake import Lake
from ...core.memory.experience_induction import InductionParams, InductionReport, induce_tree
from ...core.memory.experience_llm import llm_rewriter
from ...core.memory.experience_tree import ExperienceTree, ToEParams, from_table, render_markdown, to_table
from ...core.settings import Settings
from ..context import days_of
from ..resources import FinragResource
from .evidence import _split, lookback_days, require_partitions

TREE_ID = "prior"  # the induced tree without utility updates; the toe variants (issue 7 part 3) add their own


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
    parts = [build_anchors(_split(news, d), clusters, dt.date.fromisoformat(d), cal, bench, sectors)[0] for d in days]
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
    """Every written snapshot carries exactly the declared schema."""
    import pyarrow.parquet as pq

    spec = lake.spec("experience_tree")
    bad = [d for d in days if not (f := lake.path("experience_tree", tree_id=TREE_ID, date=d)).exists()
           or not pq.read_schema(f).remove_metadata().equals(spec.schema)]
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
            "factor -> analytical principle, Q per horizon, recall/hit. On the induction day (the last session of "
            "the train split) the tree is induced (eqs 3-5) from train-split anchors decided before that day only "
            "(rebuilt from news_raw/evidence with the anchors rule; rule skeletons clustered by MiniLM cosine, or LLM "
            "rewrites with an LLM reader); Q_init = q0. Afterwards snapshot(D) = snapshot(D-1): there are no utility "
            "updates here — updates from matured feedback come with the toe variants (issue 7 part 3). Days before "
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
        for d in days:
            if first is None or d < first:
                tree = None
                lake.write("experience_tree", to_table(ExperienceTree([], params)), tree_id=TREE_ID, date=d)
                kinds["empty"] += 1
                continue
            if tree is None:
                prev = cal.offset(d, -1).isoformat()
                if d > first and lake.exists("experience_tree", tree_id=TREE_ID, date=prev):
                    tree = from_table(lake.read("experience_tree", dates=[prev], tree_id=TREE_ID), params)
                    kinds["carried"] += 1
                else:
                    tree, report = induce(s, lake, cal, first)
                    kinds["induced"] += 1
            else:
                kinds["carried"] += 1
            lake.write("experience_tree", to_table(tree), tree_id=TREE_ID, date=d)
        meta = {
            "tree_id": TREE_ID,
            "induction_day": first or "none (no train split inside the calendar)",
            "partitions": dg.MetadataValue.json(kinds),
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
