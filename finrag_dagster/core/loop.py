"""The market-feedback loop of one memory variant, stepped one decision day at a time.

For decision day D (seed 000 §3.5, §4.1; SPEC §4):

1. memory(D) = memory(D−1) + the feedback whose label matured on D−1 (decision days D−1−h), or
   an empty memory when D starts the evaluated split (prequential reset);
2. contexts(D) = top-M of each anchor's candidate pool by r + λ·mean_h adj;
3. reader_outputs(D) from the frozen reader (prompt cache first).

The snapshot used on D therefore contains exactly the feedback matured on or before D−1.
Because contexts on D depend on feedback from D−2 and earlier, a range of days cannot be computed
stage by stage: this module steps through the days in order.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa

from .calendar import TradingCalendar
from .memory.feedback import build_feedback, empty_feedback, shuffle_labels
from .memory.source_memory import MemoryParams, SourceMemory, rerank, shuffled_event_type
from .reader.backends import Backend
from .reader.cache import PromptCache
from .reader.prompt import EvidenceItem
from .reader.run import DayStats, read_day
from .schemas import TableSpec, register
from .settings import HORIZONS

CONTEXTS = register(
    TableSpec(
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
)


VARIANT_FAMILIES = ("no_memory", "source_memory", "top5_all_source", "shuffled_labels", "shuffled_event_types")


@dataclass(frozen=True)
class Variant:
    name: str  # the lake key, e.g. "source_memory" or "shuffled_labels_s3"
    family: str
    lam: float
    credit: str = "cited"  # cited | top5
    shuffle_labels_seed: int | None = None
    shuffle_types_seed: int | None = None

    @property
    def uses_memory(self) -> bool:
        return self.family != "no_memory"


def variants_of(family: str, lam: float, n_seeds: int) -> list[Variant]:
    """The variants a family stands for (seed 000 §4.2-4.3); shuffles come in ``n_seeds`` repeats."""
    if family == "no_memory":
        return [Variant("no_memory", family, 0.0)]
    if family == "source_memory":
        return [Variant("source_memory", family, lam)]
    if family == "top5_all_source":
        return [Variant("top5_all_source", family, lam, credit="top5")]
    if family == "shuffled_labels":
        return [Variant(f"shuffled_labels_s{s}", family, lam, shuffle_labels_seed=s) for s in range(n_seeds)]
    if family == "shuffled_event_types":
        return [Variant(f"shuffled_event_types_s{s}", family, lam, shuffle_types_seed=s) for s in range(n_seeds)]
    raise ValueError(f"unknown variant family {family!r}; choose from {VARIANT_FAMILIES}")


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


@dataclass
class StepResult:
    day: str
    snapshot: pl.DataFrame | None
    contexts: pl.DataFrame
    outputs: pl.DataFrame
    feedback_applied: pl.DataFrame
    stats: DayStats


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
    principles_of: Callable[[str, pl.DataFrame], dict[str, str]] | None = None


def matured_on(prev_day: str, v: Variant, env: LoopEnv, recent: dict[str, Past], split_start: str) -> pl.DataFrame:
    """Feedback rows whose label matured exactly on ``prev_day`` (decision days prev_day − h)."""
    frames = []
    for h in HORIZONS:
        i = env.cal.session_index(prev_day) - h
        if i < 0:
            continue
        d0 = env.cal.sessions[i].item().isoformat()
        if d0 < split_start:
            continue
        past = recent.get(d0) or env.past_of(d0, v)
        if past is None or past.outputs.height == 0:
            continue
        hk = f"{h}D"
        labels = env.labels_of(d0)
        if v.shuffle_labels_seed is not None:
            labels = shuffle_labels(labels, v.shuffle_labels_seed)
        fb = build_feedback(
            past.outputs.filter(pl.col("horizon") == hk),
            labels.filter(pl.col("horizon") == hk),
            past.contexts,
            dt.date.fromisoformat(prev_day),
            env.class_weights(split_start),
            past.keys,
            v.credit,
        )
        frames.append(fb.filter(pl.col("maturity_day") == dt.date.fromisoformat(prev_day)))
    return pl.concat(frames) if frames else empty_feedback()


def step(d: str, v: Variant, env: LoopEnv, memory: SourceMemory | None, recent: dict[str, Past]) -> tuple[StepResult, SourceMemory | None]:
    """One decision day: update memory with D−1's matured feedback, rerank, read."""
    data = env.day_data(d)
    keys = memory_keys(data.anchors, v)
    applied = empty_feedback()
    snapshot = None
    if v.uses_memory:
        start = env.split_start(d)
        if d == start:
            memory = SourceMemory(env.params)
        elif memory is None:
            raise ValueError(f"{v.name}: no memory snapshot for the day before {d} (split started {start}); run from the split start")
        if d != start:
            prev = env.cal.offset(d, -1).isoformat()
            applied = matured_on(prev, v, env, recent, start)
            memory.apply(applied)
        snapshot = memory.to_frame()
    contexts = rerank(data.candidates, keys, memory if v.uses_memory else None, v.lam, env.m)
    principles = env.principles_of(d, data.anchors) if env.principles_of else None
    cache = env.cache_of(d)
    outputs, stats = read_day(d, data.anchors, contexts, env.evidence, data.cards, env.companies, env.backend, cache, env.decoding, principles)
    cache.flush()
    recent[d] = Past(outputs, contexts, keys)
    for old in [k for k in recent if k < env.cal.offset(d, -7).isoformat()]:
        del recent[old]
    return StepResult(d, snapshot, contexts, outputs, applied, stats), memory


def run_days(days: list[str], v: Variant, env: LoopEnv, memory: SourceMemory | None) -> list[StepResult]:
    """Step the loop over consecutive decision days; ``memory`` is the snapshot of the day before."""
    recent: dict[str, Past] = {}
    out = []
    for d in sorted(days):
        res, memory = step(d, v, env, memory, recent)
        out.append(res)
    return out
