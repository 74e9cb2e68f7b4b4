"""The market-feedback loop of one memory variant, stepped one decision day at a time.

For decision day D (seed 000 §3.5, §4.1; docs/method.md §4): memory(D) = memory(D−1) + the feedback
whose label matured on D−1 (empty at the start of the evaluated split); contexts(D) = top-M of each
pool by r + λ·mean_h adj; for toe variants the tree and the principles (:mod:`.experience.loop`);
then reader_outputs(D) from the frozen reader (prompt cache first). The snapshot used on D holds
exactly the feedback matured on or before D−1, and since contexts on D depend on feedback from D−2
and earlier, a range of days cannot be computed stage by stage: this module steps through the days.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa

from . import families
from .calendar import TradingCalendar, maturing_on
from .experience.loop import AnchorStates, choose_principles, empty_updates, toe_updates
from .experience.tree import ExperienceTree, to_table
from .memory.families import FamilyMap
from .memory.feedback import CreditRule, build_feedback, empty_feedback, shuffle_labels
from .memory.source_memory import FAMILIES, MemoryParams, SourceMemory, rerank, shuffled_event_type
from .reader.backends import Backend
from .reader.cache import PromptCache
from .reader.prompt import EvidenceItem
from .reader.run import DayStats, PromptTexts, ReaderIncomplete, read_day
from .settings import HORIZON_NAMES
from .storage.schemas import TableSpec

CONTEXTS = TableSpec(
    "contexts",
    pa.schema(
        [
            pa.field("anchor_id", pa.string(), nullable=False),
            pa.field("passage_id", pa.string(), nullable=False),
            pa.field("source_family", pa.string(), nullable=False),
            pa.field("relevance", pa.float64(), nullable=False),
            pa.field("memory_adj", pa.float64(), nullable=False),
            pa.field("final_score", pa.float64(), nullable=False),
            pa.field("position", pa.int32(), nullable=False),
        ]
    ),
    ("variant", "date"),
    ("anchor_id", "position"),
    "The reader's top-M context per anchor: final score r + lambda * mean_h adj (seed 000 eq. 6).",
    decision_time=True,
)


VARIANT_FAMILIES = families.NAMES
LORA_FAMILIES = families.LORA_FAMILIES  # read by base model + the seed's LoRA adapter


@dataclass(frozen=True)
class Variant:
    name: str  # the lake key, e.g. "source_memory" or "shuffled_labels_s3"
    family: str
    lam: float
    credit: str = "cited"  # cited | top5
    shuffle_labels_seed: int | None = None
    shuffle_types_seed: int | None = None
    toe: bool = False  # a Tree-of-Experience principle in the prompt, updated from matured feedback
    lora_seed: int | None = None  # LoRA families: the training seed of the adapter that reads

    @property
    def uses_memory(self) -> bool:
        """Whether the source memory reranks contexts (and is updated) in this variant."""
        return families.family(self.family).memory


def variants_of(family: str, lam: float, n_seeds: int, lora_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)) -> list[Variant]:
    """The variants a family stands for (seed 000 §4.2-4.3, :mod:`.families`); shuffles come in
    ``n_seeds`` repeats, LoRA families in one variant per training seed (``lora_seeds``, settings.lora.seeds)."""
    f = families.family(family)
    lam = lam if f.memory else 0.0
    if f.lora:
        return [Variant(f"{family}_s{k}", family, lam, lora_seed=k) for k in lora_seeds]
    if f.shuffle == "labels":
        return [Variant(f"{family}_s{s}", family, lam, shuffle_labels_seed=s) for s in range(n_seeds)]
    if f.shuffle == "event_types":
        return [Variant(f"{family}_s{s}", family, lam, shuffle_types_seed=s) for s in range(n_seeds)]
    return [Variant(family, family, lam, credit=f.credit, toe=f.toe)]


def memory_keys(anchors: pl.DataFrame, v: Variant) -> dict[str, str]:
    if v.shuffle_types_seed is None:
        return dict(zip(anchors["anchor_id"].to_list(), anchors["event_type"].to_list()))
    return {a: shuffled_event_type(a, v.shuffle_types_seed) for a in anchors["anchor_id"].to_list()}


@dataclass
class DayData:
    anchors: pl.DataFrame
    candidates: pl.DataFrame
    cards: dict[str, tuple[str, str]]


@dataclass
class Past:
    """What feedback needs about an earlier decision day of this variant."""

    outputs: pl.DataFrame
    contexts: pl.DataFrame
    keys: dict[str, str]
    selections: pl.DataFrame | None = None  # toe variants: the principle each anchor used


@dataclass
class StepResult:
    day: str
    snapshot: pl.DataFrame | None
    contexts: pl.DataFrame
    outputs: pl.DataFrame
    feedback_applied: pl.DataFrame
    stats: DayStats
    tree: pa.Table | None = None  # toe variants: the tree's rows (experience/tree.py to_table) after D's updates and selections
    selections: pl.DataFrame | None = None
    toe_updates: pl.DataFrame | None = None


@dataclass
class LoopEnv:
    cal: TradingCalendar
    day_data: Callable[[str], DayData]
    split_start: Callable[[str], str]  # day -> first day of its split (memory resets there)
    class_weights: Callable[[str], dict]  # split start -> w_y per horizon and label
    labels_of: Callable[[str], pl.DataFrame]  # decision day -> its labels rows
    past_of: Callable[[str, Variant], Past | None]  # earlier decision day (before the range) -> stored rows
    evidence: dict[str, EvidenceItem]
    companies: dict[str, str]
    backend: Backend
    cache_of: Callable[[str], PromptCache]
    decoding: dict
    m: int = 5
    params: MemoryParams = field(default_factory=MemoryParams)
    params_of: Callable[[str], MemoryParams] | None = None  # per decision day (e.g. Table 6's selection on the test split)
    toe: ToEEnv | None = None
    shuffled: dict = field(default_factory=dict)  # (decision day, shuffle seed) -> permuted labels (see _labels)
    # settings.memory.credit: "cited_correct" (seed 000) or "passage_stance" (an extension: the prompts
    # ask for each passage's stance and the feedback credits each passage by it; docs/method.md §4)
    credit_rule: str = "cited_correct"
    # settings.memory.families: passage -> memory family (None: seed 000's news / sec_filing, the
    # passage's source_family; a finer scheme is an extension, memory/families.py)
    family_of: FamilyMap | None = None


@dataclass
class ToEEnv:
    """What the toe variants need: the prior tree on a day (the induced tree, reset at a split
    start), the anchors' states (ids, layer-1 texts, skeletons, vectors) per day, the stored
    selections of days before the range, and the expansion cap."""

    prior: Callable[[str], ExperienceTree | None]
    states: Callable[[str], tuple[list[str], list[str], list[str], np.ndarray]]
    past_selections: Callable[[str, Variant], pl.DataFrame]
    expansion_cap: int = 32
    judge: Callable | None = None  # an LLM judge/expander (experience/llm.py llm_judge); None: the rule judge
    embed_fn: Callable | None = None  # texts -> unit vectors, for the LLM's new principles


def _maturing_on(prev_day: str, v: Variant, env: LoopEnv, recent: dict[str, Past], split_start: str):
    """(decision day d0, horizon h, its stored Past) for every horizon whose label matured exactly on
    ``prev_day`` (d0 = prev_day − h sessions, inside the split, with reader outputs)."""
    for d0, h in maturing_on(env.cal, prev_day, split_start):
        past = recent.get(d0) or env.past_of(d0, v)
        if past is None or past.outputs.height == 0:
            continue
        yield d0, h, past


def _labels(env: LoopEnv, d0: str, shuffle_seed: int | None) -> pl.DataFrame:
    """The labels of decision day ``d0`` as the variant sees them (permuted for a shuffled-labels
    variant), computed once per day and seed: each day's labels are asked for once per horizon."""
    if shuffle_seed is None:
        return env.labels_of(d0)
    key = (d0, shuffle_seed)
    if key not in env.shuffled:
        env.shuffled[key] = shuffle_labels(env.labels_of(d0), shuffle_seed)
    return env.shuffled[key]


def matured_on(prev_day: str, v: Variant, env: LoopEnv, recent: dict[str, Past], split_start: str) -> pl.DataFrame:
    """Feedback rows whose label matured exactly on ``prev_day`` (decision days prev_day − h)."""
    frames = []
    for d0, h, past in _maturing_on(prev_day, v, env, recent, split_start):
        hk = HORIZON_NAMES[h]
        labels = _labels(env, d0, v.shuffle_labels_seed)
        fb = build_feedback(
            past.outputs.filter(pl.col("horizon") == hk),
            labels.filter(pl.col("horizon") == hk),
            past.contexts,
            as_of_day=dt.date.fromisoformat(prev_day),
            weights=env.class_weights(split_start),
            memory_key=past.keys,
            how=CreditRule(v.credit, env.credit_rule, env.family_of),
        )
        frames.append(fb.filter(pl.col("maturity_day") == dt.date.fromisoformat(prev_day)))
    return pl.concat(frames) if frames else empty_feedback(env.credit_rule)


def toe_matured_on(prev_day: str, v: Variant, env: LoopEnv, tree: ExperienceTree, recent: dict[str, Past], split_start: str) -> pl.DataFrame:
    """Apply eq. 13 for every (anchor, horizon) whose label matured exactly on ``prev_day``."""
    frames = []
    for d0, h, past in _maturing_on(prev_day, v, env, recent, split_start):
        sel = past.selections if past.selections is not None else env.toe.past_selections(d0, v)
        frames.append(toe_updates(tree, d0, HORIZON_NAMES[h], sel, past.outputs, env.labels_of(d0)))
    return pl.concat(frames) if frames else empty_updates()


def step(
    d: str, v: Variant, env: LoopEnv, memory: SourceMemory | None, recent: dict[str, Past], tree: ExperienceTree | None = None
) -> tuple[StepResult, SourceMemory | None, ExperienceTree | None]:
    """One decision day: update memory (and tree) with D−1's matured feedback, rerank, select principles, read."""
    data = env.day_data(d)
    keys = memory_keys(data.anchors, v)
    applied = empty_feedback(env.credit_rule)
    snapshot = None
    start = env.split_start(d)
    params = env.params_of(d) if env.params_of is not None else env.params
    if v.uses_memory:
        if d == start:
            memory = SourceMemory(params, env.family_of.families if env.family_of is not None else FAMILIES)
        elif memory is None:
            raise ValueError(f"{v.name}: no memory snapshot for the day before {d} (split started {start}); run from the split start")
        if d != start:
            prev = env.cal.offset(d, -1).isoformat()
            applied = matured_on(prev, v, env, recent, start)
            memory.apply(applied)
        snapshot = memory.to_frame()
    contexts = rerank(data.candidates, keys, memory if v.uses_memory else None, params.lam if v.uses_memory else v.lam, env.m, env.family_of)
    principles, selections, updates = None, None, None
    if v.toe:
        if env.toe is None:
            raise ValueError(f"{v.name}: a toe variant needs LoopEnv.toe")
        if d == start:
            tree = env.toe.prior(d)
            updates = empty_updates()
        elif tree is None:
            raise ValueError(f"{v.name}: no experience tree for the day before {d} (split started {start}); run from the split start")
        else:
            updates = toe_matured_on(env.cal.offset(d, -1).isoformat(), v, env, tree, recent, start)
        if tree is None:
            raise ValueError(f"{v.name}: no prior experience tree on {d}; materialise experience_tree first")
    cache = env.cache_of(d)
    try:
        if v.toe:
            ids, f_texts, skels, vecs = env.toe.states(d)
            selections, principles = choose_principles(
                tree,
                AnchorStates(ids, f_texts, skels, vecs),
                expansion_cap=env.toe.expansion_cap,
                judge=env.toe.judge,
                embed_fn=env.toe.embed_fn,
                cache=cache,
            )
        outputs, stats = read_day(
            d,
            data.anchors,
            contexts,
            texts=PromptTexts(env.evidence, data.cards, env.companies, principles, stances=env.credit_rule == "passage_stance"),
            backend=env.backend,
            cache=cache,
            decoding=env.decoding,
        )
    finally:
        cache.flush()  # only successful answers are in it: keep them even when the day fails
    if stats.failed_anchors:
        raise ReaderIncomplete(d, stats)  # never a half day: a re-run sends only the missing prompts
    recent[d] = Past(outputs, contexts, keys, selections)
    for old in [k for k in recent if k < env.cal.offset(d, -7).isoformat()]:
        del recent[old]
    table = to_table(tree) if v.toe else None
    return StepResult(d, snapshot, contexts, outputs, applied, stats, table, selections, updates), memory, tree


def run_days(
    days: list[str], v: Variant, env: LoopEnv, memory: SourceMemory | None, tree: ExperienceTree | None = None, on_day=None
) -> list[StepResult]:
    """Step the loop over consecutive decision days; ``memory`` (and ``tree`` for a toe variant)
    is the state of the day before. ``on_day(day)`` is called after each day (progress)."""
    recent: dict[str, Past] = {}
    out = []
    for d in sorted(days):
        res, memory, tree = step(d, v, env, memory, recent, tree)
        out.append(res)
        if on_day is not None:
            on_day(d)
    return out
