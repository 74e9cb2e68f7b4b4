"""The Bayesian source memory (seed 000 §3.5 eqs 4-6, App. B's update example, App. C).

Cells (source family s, event type c, horizon h) hold counts a, b from 0.
û = (a+1)/(a+b+2); n = a+b; η = n/(n+κ); adj_h = clip(η(û−0.5), −δ, δ);
final score = r + λ·mean_h(adj_h) — one shared context for the three horizons.
Feedback after maturity: a correct prediction adds w_y to ``a`` of each cited family's cell, a
wrong one to ``b``; credit is split equally across the distinct cited families; w_y = 1/(3π_y).
Invalid IDs are ignored and no valid citation means no update. ``memory.credit = "passage_stance"``
(an extension beyond the paper, docs/method.md §4) credits each passage by its own stance instead
(:mod:`.feedback`). ``memory.families = "fine"`` (an extension, :mod:`.families`) keys the cells by
finer families (news by publisher class, filings by form and item) instead of the two broad ones.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from ..events import EVENT_TYPES
from ..settings import HORIZON_NAMES, HORIZONS
from ..storage.schemas import TableSpec

FAMILIES = ("news", "sec_filing")
HKEYS = tuple(HORIZON_NAMES[h] for h in HORIZONS)

MEMORY_SNAPSHOT = TableSpec(
    "memory_snapshot",
    pa.schema(
        [
            pa.field("source_family", pa.string(), nullable=False),
            pa.field("event_type", pa.string(), nullable=False),
            pa.field("horizon", pa.string(), nullable=False),
            pa.field("a", pa.float64(), nullable=False),
            pa.field("b", pa.float64(), nullable=False),
            pa.field("n", pa.float64(), nullable=False),
            pa.field("u_hat", pa.float64(), nullable=False),
            pa.field("eta", pa.float64(), nullable=False),
            pa.field("adjustment", pa.float64(), nullable=False),
            pa.field("updates", pa.int64(), nullable=False),
        ]
    ),
    ("variant", "date"),
    ("source_family", "event_type", "horizon"),
    "Source-memory cells as used on decision day D: exactly the feedback matured on or before D-1 within the split.",
    decision_time=True,
)


@dataclass(frozen=True)
class MemoryParams:
    kappa: float = 30.0
    delta: float = 0.20
    lam: float = 0.30

    @classmethod
    def from_settings(cls, s, kappa: float | None = None, delta: float | None = None, lam: float | None = None) -> "MemoryParams":
        """``s.memory`` (a Settings object); a value given here (not None, not negative) overrides it."""
        m = s.memory
        pick = lambda v, d: d if v is None or v < 0 else v  # noqa: E731
        return cls(kappa=pick(kappa, m.kappa), delta=pick(delta, m.delta), lam=pick(lam, m.lam))


def u_hat(a: float, b: float) -> float:
    """Posterior utility, eq. 4."""
    return (a + 1.0) / (a + b + 2.0)


def adjustment(a: float, b: float, kappa: float, delta: float) -> float:
    """Shrunk, clipped centred utility inside eq. 6: clip(η(û−0.5), −δ, δ)."""
    n = a + b
    eta = n / (n + kappa) if n + kappa > 0 else 0.0
    return float(np.clip(eta * (u_hat(a, b) - 0.5), -delta, delta))


def class_weights(freq: dict[str, dict[int, float]]) -> dict[str, dict[int, float]]:
    """w_y = 1/(3·π_y) per horizon (π: label frequencies); a class never seen gets weight 1."""
    return {h: {y: (1.0 / (3.0 * p) if p > 0 else 1.0) for y, p in f.items()} for h, f in freq.items()}


class SourceMemory:
    """Counts of every (family, event type, horizon) cell; ``families``: those the snapshot lists
    (seed 000's two, or a finer scheme's, :mod:`.families`)."""

    def __init__(self, params: MemoryParams = MemoryParams(), families: tuple[str, ...] = FAMILIES):
        self.params = params
        self.families = tuple(families)
        self.a: dict[tuple[str, str, str], float] = {}
        self.b: dict[tuple[str, str, str], float] = {}
        self.updates: dict[tuple[str, str, str], int] = {}

    def cell(self, fam: str, etype: str, h: str) -> tuple[float, float]:
        k = (fam, etype, h)
        return self.a.get(k, 0.0), self.b.get(k, 0.0)

    def adj(self, fam: str, etype: str, h: str) -> float:
        a, b = self.cell(fam, etype, h)
        return adjustment(a, b, self.params.kappa, self.params.delta)

    def mean_adj(self, fam: str, etype: str) -> float:
        """Average of the clipped adjustments over the 1D/3D/5D cells (the shared-context score)."""
        return float(np.mean([self.adj(fam, etype, h) for h in HKEYS]))

    def add(self, fam: str, etype: str, h: str, weight: float, correct: bool) -> None:
        k = (fam, etype, h)
        target = self.a if correct else self.b
        target[k] = target.get(k, 0.0) + weight
        self.updates[k] = self.updates.get(k, 0) + 1

    def apply(self, feedback: pl.DataFrame) -> int:
        """Apply feedback rows (event_type, horizon, correct, families, weight, applied); returns updates.

        Rows of the passage-stance credit (``families_right``/``families_wrong`` columns, an
        extension: docs/method.md §4) add weight/k to ``a`` of the family of each passage whose
        stance was right and to ``b`` of each one whose stance was wrong, k = passages credited."""
        n = 0
        stance = "families_right" in feedback.columns
        for r in feedback.filter(pl.col("applied")).iter_rows(named=True):
            if stance:
                k = len(r["families_right"]) + len(r["families_wrong"])
                for right, fams in ((True, r["families_right"]), (False, r["families_wrong"])):
                    for f in sorted(set(fams)):  # one update per (family, verdict): its passages' shares summed
                        self.add(f, r["memory_event_type"], r["horizon"], r["weight"] * fams.count(f) / k, right)
                        n += 1
                continue
            fams = sorted(set(r["families"]))
            for f in fams:
                self.add(f, r["memory_event_type"], r["horizon"], r["weight"] / len(fams), r["correct"])
                n += 1
        return n

    def to_frame(self) -> pl.DataFrame:
        rows = []
        for f in self.families:
            for c in EVENT_TYPES:
                for h in HKEYS:
                    a, b = self.cell(f, c, h)
                    n = a + b
                    rows.append(
                        {
                            "source_family": f,
                            "event_type": c,
                            "horizon": h,
                            "a": a,
                            "b": b,
                            "n": n,
                            "u_hat": u_hat(a, b),
                            "eta": n / (n + self.params.kappa),
                            "adjustment": adjustment(a, b, self.params.kappa, self.params.delta),
                            "updates": self.updates.get((f, c, h), 0),
                        }
                    )
        return pl.DataFrame(rows)

    @staticmethod
    def from_frame(df: pl.DataFrame, params: MemoryParams = MemoryParams(), families: tuple[str, ...] = FAMILIES) -> "SourceMemory":
        have = set(df["source_family"].to_list()) if df.height else set()
        if have - set(families):
            raise ValueError(f"memory snapshot has families {sorted(have - set(families))} outside memory.families {list(families)}")
        m = SourceMemory(params, families)
        for r in df.iter_rows(named=True):
            k = (r["source_family"], r["event_type"], r["horizon"])
            if r["a"]:
                m.a[k] = r["a"]
            if r["b"]:
                m.b[k] = r["b"]
            if r["updates"]:
                m.updates[k] = r["updates"]
        return m


def shuffled_event_type(anchor_id: str, seed: int) -> str:
    """The memory key of an anchor under the shuffled-event-types check: a seeded random type."""
    h = hashlib.sha256(f"{seed}:{anchor_id}".encode()).digest()
    return EVENT_TYPES[h[0] % len(EVENT_TYPES)]


def rerank(candidates: pl.DataFrame, memory_key: dict[str, str], memory: SourceMemory | None, lam: float, m: int, family_of=None) -> pl.DataFrame:
    """Top-M context per anchor by final score r + λ·mean_h adj (eq. 6, shared context).

    Ties keep the static rank order. ``memory_key``: anchor_id → event type used for the cells.
    ``family_of``: a :class:`.families.FamilyMap` giving each passage its memory family (None: its
    ``source_family``, seed 000's two families).
    """
    if candidates.height == 0:
        return candidates.select("anchor_id", "passage_id", "source_family", "relevance").with_columns(
            pl.lit(0.0).alias("memory_adj"), pl.lit(0.0).alias("final_score"), pl.lit(0, dtype=pl.Int32).alias("position")
        )
    if memory is None or lam == 0:
        adj = [0.0] * candidates.height
    else:
        cache: dict[tuple[str, str], float] = {}
        adj = []
        fams = candidates["source_family"].to_list()
        if family_of is not None and not family_of.identity:
            fams = [family_of.family(p, f) for p, f in zip(candidates["passage_id"].to_list(), fams)]
        for a, f in zip(candidates["anchor_id"].to_list(), fams):
            k = (f, memory_key[a])
            if k not in cache:
                cache[k] = memory.mean_adj(*k)
            adj.append(cache[k])
    c = candidates.with_columns(pl.Series("memory_adj", adj, dtype=pl.Float64))
    c = c.with_columns((pl.col("relevance") + lam * pl.col("memory_adj")).alias("final_score"))
    c = c.sort(["anchor_id", "final_score", "rank"], descending=[False, True, False])
    c = c.with_columns(pl.int_range(1, pl.len() + 1).over("anchor_id").cast(pl.Int32).alias("position"))
    return c.filter(pl.col("position") <= m).select("anchor_id", "passage_id", "source_family", "relevance", "memory_adj", "final_score", "position")
