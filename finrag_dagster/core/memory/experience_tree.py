"""Tree-of-Experience (seed 002 §4.2, App. 8.5; SPEC §9): the structured experience memory.

A depth-2 tree: layer 1 = analytical factors (matched by keywords), layer 2 = analytical
principles under a factor (matched by embedding cosine). Each root-to-leaf path P holds a utility
vector Q(P) over horizons in [0, 2·q0], a recall count and a hit count.

Selection (eqs 6-11): f1 = keyword match of the factor, keep the top k1 factors; leaves whose
cosine with the state clears λ = 0.8 are candidates; ρ = (f1·f2)^(1/2) (geometric mean, L = 2);
S = ρ·Q_h for the task's horizon. A judge decides reuse vs expansion: with the embedded reader it
is the explicit rule "expand when no leaf clears λ" (an LLM backend would be asked instead); the
expander adds a leaf under the best factor with Q_init = q0.
Update (eq 13), only after the horizon matured:
Q_h ← clip(Q_h + η·(1 − ((Q_h − q0)/q0)²)/(1 + log(1 + n_hit))·r, 0, 2q0), r = sign(score)·α.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Leaf:
    leaf_id: str
    factor: str
    principle: str
    embedding: np.ndarray  # unit vector
    q: dict[str, float]  # horizon -> utility in [0, 2 q0]
    n_recall: int = 0
    n_hit: int = 0


@dataclass
class Factor:
    name: str
    keywords: tuple[str, ...]
    leaves: list[Leaf] = field(default_factory=list)


@dataclass(frozen=True)
class ToEParams:
    k1: int = 8
    leaf_threshold: float = 0.8
    q0: float = 1.0
    eta: float = 10.0
    horizons: tuple[str, ...] = ("1D", "3D", "5D")


@dataclass
class Selection:
    leaf: Leaf | None
    factor: Factor | None
    rho: float
    score: float
    expand: bool
    candidates: list[tuple[str, float]]  # (leaf id, S) of the leaves that cleared the threshold


def keyword_match(text: str, keywords: tuple[str, ...]) -> float:
    """f_match^(1): share of a factor's keywords present in the text (word boundaries), in [0, 1]."""
    if not keywords:
        return 0.0
    low = (text or "").lower()
    hits = sum(1 for k in keywords if re.search(rf"(?<![\w]){re.escape(k.lower())}(?![\w])", low))
    return hits / len(keywords)


def formula_update(q: float, r: float, n_hit: int, q0: float = 1.0, eta: float = 10.0) -> float:
    """seed 002 eq. 13 for one horizon component, clipped to [0, 2 q0]."""
    step = eta * (1.0 - ((q - q0) / q0) ** 2) / (1.0 + math.log(1.0 + n_hit))
    return float(min(max(q + step * r, 0.0), 2.0 * q0))


class ExperienceTree:
    def __init__(self, factors: list[Factor], params: ToEParams = ToEParams()):
        self.factors = factors
        self.params = params
        self._next = sum(len(f.leaves) for f in factors)

    def leaves(self) -> list[Leaf]:
        return [leaf for f in self.factors for leaf in f.leaves]

    def select(self, text: str, embedding: np.ndarray, horizon: str) -> Selection:
        """Coarse-to-fine selection of a path for a task state (eqs 7-11)."""
        p = self.params
        f1 = sorted(((keyword_match(text, f.keywords), i) for i, f in enumerate(self.factors)), key=lambda x: (-x[0], x[1]))
        kept = [(m, self.factors[i]) for m, i in f1[: p.k1] if m > 0]
        best, cands = None, []
        for m1, fac in kept:
            for leaf in fac.leaves:
                cos = float(np.dot(embedding, leaf.embedding))
                if cos < p.leaf_threshold:
                    continue
                rho = math.sqrt(m1 * max(cos, 0.0))
                s = rho * leaf.q[horizon]
                cands.append((leaf.leaf_id, s))
                if best is None or s > best[0]:
                    best = (s, rho, leaf, fac)
        if best is None:  # the embedded judge: nothing clears the threshold -> expand under the best factor
            fac = kept[0][1] if kept else None
            return Selection(None, fac, 0.0, 0.0, fac is not None, cands)
        s, rho, leaf, fac = best
        leaf.n_recall += 1
        return Selection(leaf, fac, rho, s, False, cands)

    def expand(self, factor: Factor, principle: str, embedding: np.ndarray) -> Leaf:
        """A new leaf under ``factor`` with Q_init = q0 on every horizon."""
        leaf = Leaf(f"L{self._next:05d}", factor.name, principle, embedding, {h: self.params.q0 for h in self.params.horizons})
        self._next += 1
        factor.leaves.append(leaf)
        return leaf

    def update(self, leaf_id: str, horizon: str, reward: float) -> float:
        """Apply matured feedback r = sign(score)·α to one horizon of a path (eq. 13)."""
        leaf = next(x for x in self.leaves() if x.leaf_id == leaf_id)
        leaf.q[horizon] = formula_update(leaf.q[horizon], reward, leaf.n_hit, self.params.q0, self.params.eta)
        leaf.n_hit += 1
        return leaf.q[horizon]

    def to_markdown(self) -> str:
        lines = []
        for f in self.factors:
            lines.append(f"- **{f.name}** ({', '.join(f.keywords[:6])})")
            for leaf in f.leaves:
                qs = ", ".join(f"{h} {leaf.q[h]:.2f}" for h in self.params.horizons)
                lines.append(f"  - `{leaf.leaf_id}` {leaf.principle} — Q: {qs}; recalled {leaf.n_recall}, hits {leaf.n_hit}")
        return "\n".join(lines)
