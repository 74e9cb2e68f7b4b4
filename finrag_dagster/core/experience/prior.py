"""The prior Tree-of-Experience (tree_id ``prior``, seed 002 §4.2) over the lake.

Induced once, on the last train session (:func:`~finrag_dagster.core.splits.induction_day`), from
the train-split anchors decided strictly before it, then carried unchanged day after day: the
utility updates from matured feedback belong to the toe variants, each in its own tree. Days
before the induction day hold an empty tree. Each day is written as its state (experience_tree)
and the content of new positions written once (experience_leaves), see :mod:`.store`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import polars as pl

from ..anchors import anchor_window, anchors_from_lake
from ..embeddings import embed
from ..splits import induction_day, train_days_before
from ..storage.lake import require_partitions
from .induction import InductionParams, InductionReport, induce_tree
from .llm import llm_rewriter
from .store import known_before, read_tree, write_rows
from .tree import ExperienceTree, ToEParams, to_table

if TYPE_CHECKING:
    from ..calendar import TradingCalendar
    from ..settings import Settings
    from ..storage.lake import Lake

TREE_ID = "prior"  # the induced tree without utility updates; the toe variants add their own


def company_names(lake: Lake) -> dict[str, list[str]]:
    """Ticker -> [company name, aliases...] from the universe (masked out of the skeletons)."""
    uni = lake.read("universe")
    return {t: [c, *[a for a in (al or "").split("|") if a]] for t, c, al in zip(uni["ticker"], uni["company"], uni["aliases"])}


def historical_anchors(s: Settings, lake: Lake, cal: TradingCalendar, days: list[str]) -> pl.DataFrame:
    """Anchors of ``days`` rebuilt with the anchors asset's own function from news_raw and
    evidence, so the tree does not depend on which days the decision range covers."""
    if not days:
        return pl.DataFrame()
    require_partitions(lake, "news_raw", days)
    require_partitions(lake, "evidence", anchor_window(s, cal, days))
    built = anchors_from_lake(s, lake, cal, days)
    parts = [built[d][0] for d in days]
    return pl.concat(parts) if parts else pl.DataFrame()


def induce(s: Settings, lake: Lake, cal: TradingCalendar, day: str) -> tuple[ExperienceTree, InductionReport]:
    """The induced tree used on ``day``: from train-split anchors decided strictly before ``day``."""
    e = s.experience
    anchors = historical_anchors(s, lake, cal, train_days_before(s, cal, day))
    mode = e.induction if e.induction != "auto" else ("rule" if s.reader.backend == "embedded" else "llm")
    rewrite = None
    if mode == "llm" and anchors.height:
        from ..reader.backends import BackendConfig, make_backend

        rewrite = llm_rewriter(make_backend(BackendConfig.from_settings(s)))  # raises LLMBackendRequired for the embedded reader
    ev = s.evidence
    return induce_tree(
        anchors,
        lambda texts: embed(texts, ev.embed_batch_size, ev.embed_max_seq_length),
        ToEParams.from_settings(s),
        InductionParams(e.cluster_threshold, e.min_support, e.max_leaves_per_factor),
        names=company_names(lake),
        rewrite=rewrite,
    )


@dataclass
class PriorTrees:
    """What :func:`write_prior_trees` wrote: the induction day, how each day's tree came about
    (empty, induced, carried), the content rows written, the last tree and the induction's report."""

    induction_day: str | None
    kinds: dict[str, int] = field(default_factory=lambda: {"empty": 0, "induced": 0, "carried": 0})
    content_rows: int = 0
    tree: ExperienceTree | None = None
    report: InductionReport | None = None


def write_prior_trees(s: Settings, lake: Lake, cal: TradingCalendar, days: list[str]) -> PriorTrees:
    """Write the prior tree of each of ``days``: the induction on the induction day, else the tree
    of D-1 (empty before the induction day).

    When D-1 is not materialised (a range starting after the induction day) the induction is
    re-run for D; it reads the same train anchors, so it is the same tree the chain would carry.
    """
    params = ToEParams.from_settings(s)
    first = induction_day(s, cal)
    out = PriorTrees(first)
    tree: ExperienceTree | None = None
    known = known_before(lake, TREE_ID, days[0])
    for d in days:
        if first is None or d < first:
            tree = None
            known, _ = write_rows(lake, TREE_ID, d, to_table(ExperienceTree([], params)), known)
            out.kinds["empty"] += 1
            continue
        if tree is None:
            prev = cal.offset(d, -1).isoformat()
            if d > first and lake.exists("experience_tree", tree_id=TREE_ID, date=prev):
                tree = read_tree(lake, TREE_ID, prev, params)
                out.kinds["carried"] += 1
            else:
                tree, out.report = induce(s, lake, cal, first)
                out.kinds["induced"] += 1
        else:
            out.kinds["carried"] += 1
        known, n = write_rows(lake, TREE_ID, d, to_table(tree), known)
        out.content_rows += n
    out.tree = tree
    return out
