"""Induction of the initial experience tree from pre-evaluation anchors (seed 002 eqs 3-5, Alg. 1 line 1).

Input: historical anchors of the train split only (those with a decision day before the day the tree
is first used; nothing of the evaluation window). Output: an :class:`ExperienceTree` whose layer 1
is the fixed factor catalogue :data:`FACTORS` and whose leaves are induced principles with
Q_init = q0 on every horizon, n_recall = n_hit = 0. The rule (eq. 3 rewrite into masked skeletons,
eq. 4 keyword match to a factor, eq. 5 greedy clustering of skeletons by MiniLM cosine) is
described step by step in docs/experience.md, "`core/experience/induction.py`: design notes".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from ..events import CAPITAL, EARNINGS, LEGAL, MANAGEMENT
from .tree import ExperienceTree, Factor, Leaf, ToEParams, keyword_match

# Layer 1: financial factors for single-stock news (seed 002 Table 5's "factor" column, US version).
# Each seed 000 Table 5 event type label is a keyword of the factors it belongs to.
FACTORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Earnings and guidance",
        (
            EARNINGS.lower(),
            "earnings",
            "eps",
            "revenue",
            "sales",
            "quarter",
            "quarterly results",
            "guidance",
            "outlook",
            "forecast",
            "margin",
            "profit",
            "loss",
            "beat",
            "miss",
        ),
    ),
    (
        "Legal and regulatory",
        (
            LEGAL.lower(),
            "lawsuit",
            "litigation",
            "class action",
            "investigation",
            "probe",
            "settlement",
            "fine",
            "penalty",
            "antitrust",
            "fda",
            "ftc",
            "doj",
            "approval",
            "recall",
            "compliance",
        ),
    ),
    (
        "Capital and transactions",
        (
            CAPITAL.lower(),
            "merger",
            "acquisition",
            "takeover",
            "buyout",
            "deal",
            "offering",
            "debt",
            "notes",
            "buyback",
            "repurchase",
            "dividend",
            "stake",
            "investment",
        ),
    ),
    (
        "Management and governance",
        (MANAGEMENT.lower(), "ceo", "cfo", "coo", "board", "appoints", "resigns", "departure", "management change", "executive", "chairman"),
    ),
    (
        "Operations and products",
        (
            MANAGEMENT.lower(),
            "partnership",
            "contract",
            "customer",
            "product launch",
            "launch",
            "supply chain",
            "facility",
            "plant",
            "production",
            "layoffs",
            "restructuring",
            "workforce",
        ),
    ),
    (
        "Analyst views and sentiment",
        (
            "upgrade",
            "downgrade",
            "price target",
            "analyst",
            "analysts",
            "rating",
            "outperform",
            "underperform",
            "overweight",
            "underweight",
            "initiates coverage",
        ),
    ),
    ("Macroeconomy and rates", ("fed", "interest rate", "rates", "inflation", "economy", "gdp", "jobs", "recession", "consumer spending", "demand")),
    (
        "Policy, trade and geopolitics",
        ("tariff", "tariffs", "trade war", "china", "sanctions", "government", "policy", "tax", "election", "geopolitical"),
    ),
)


def default_factors(catalogue: Sequence[tuple[str, Sequence[str]]] = FACTORS) -> list[Factor]:
    """Fresh, leafless layer-1 factors from a catalogue."""
    return [Factor(name, tuple(kw)) for name, kw in catalogue]


@dataclass(frozen=True)
class InductionParams:
    cluster_threshold: float = 0.8
    min_support: int = 2
    max_leaves_per_factor: int = 8


@dataclass
class InductionReport:
    anchors: int = 0
    unassigned: int = 0
    per_factor: dict[str, int] = field(default_factory=dict)  # anchors grouped under each factor
    clusters: int = 0
    clusters_too_small: int = 0
    clusters_over_cap: int = 0
    leaves: int = 0
    rewrite: str = "rule"
    rewrite_fallbacks: int = 0  # LLM rewrites that were unparsable (rule skeleton used)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


# ------------------------------------------------------------------ eq. 3: the rule rewrite
_NUM = re.compile(r"[$€£]?\d[\d,]*(?:\.\d+)?(?:\s?(?:%|bn\b|[bmk]\b))?", re.I)
_WS = re.compile(r"\s+")
_WIRE_TAG = re.compile(r"^\s*(?:BRIEF|UPDATE(?:\s*\d+)?|CORRECTED|EXCLUSIVE|REFILE|RPT|WRAPUP(?:\s*\d+)?)\s*-\s*")


def factor_text(event_type: str, headline: str, summary: str = "") -> str:
    """The text layer 1 is matched on: event type label, headline, summary."""
    return f"{event_type or ''}. {headline or ''}. {summary or ''}"


def skeleton(text: str, names: Sequence[str] = (), tickers: Sequence[str] = ()) -> str:
    """Rule rewrite F_rewrite: company masked, numbers masked, whitespace collapsed.

    ``names`` (company names, aliases) match case-insensitively; ``tickers`` only as written
    (upper case), so "ON" does not mask "on"; a one-letter ticker ("A") only as "(A)"."""
    s = _WIRE_TAG.sub("", text or "")
    pats = [(n.strip(), re.I) for n in names if n and n.strip()] + [(t.strip(), 0) for t in tickers if t and t.strip()]
    for n, flags in sorted(set(pats), key=lambda x: (-len(x[0]), x[0], x[1])):
        esc = re.escape(n)
        s = re.sub(rf"\(\s*{esc}\s*\)", " ", s, flags=flags)
        if len(n) > 1:
            s = re.sub(rf"(?<![\w]){esc}(?:'s)?(?![\w])", "the company", s, flags=flags)
    s = _NUM.sub("N", s)
    return _WS.sub(" ", s).strip(" .;:-")


def masked(ticker: str, text: str, names: Mapping[str, Sequence[str]]) -> str:
    """:func:`skeleton` of a text about ``ticker``: its names and aliases (any case), its ticker and
    the first word of its name (e.g. "Meta", as written, when >= 4 letters) masked."""
    nm = list(names.get(ticker, ()))
    exact = [ticker] + [w for n in nm[:1] if (w := n.split()[0].strip(",.") if n.split() else "") and len(w) >= 4 and w[0].isupper()]
    return skeleton(text, nm, exact)


def assign_factor(text: str, factors: Sequence[Factor]) -> int | None:
    """Index of the best keyword-matched factor (ties: the earlier one); None when nothing matches."""
    best, best_m = None, 0.0
    for i, f in enumerate(factors):
        m = keyword_match(text, f.keywords)
        if m > best_m:
            best, best_m = i, m
    return best


# ------------------------------------------------------------------ eq. 5: clusters
def threshold_clusters(vectors: np.ndarray, weights: Sequence[float], threshold: float) -> list[tuple[int, list[int], float]]:
    """Greedy density clustering of unit vectors: (leader, members, weight) in formation order.

    Repeatedly the unclustered item with the largest weighted count of unclustered neighbours
    (cosine >= threshold, itself included; ties: lowest index) leads a cluster of itself and
    those neighbours. O(n²) time and memory.
    """
    n = len(weights)
    if n == 0:
        return []
    v = np.asarray(vectors, dtype=np.float64)
    adj = (v @ v.T) >= threshold
    np.fill_diagonal(adj, True)
    w = np.asarray(weights, dtype=np.float64)
    score = adj.astype(np.float64) @ w
    alive = np.ones(n, dtype=bool)
    out = []
    while alive.any():
        cand = np.where(alive, score, -np.inf)
        lead = int(np.argmax(cand))  # first index among ties
        members = np.flatnonzero(adj[lead] & alive)
        out.append((lead, [int(m) for m in members], float(w[members].sum())))
        alive[members] = False
        score -= adj[:, members].astype(np.float64) @ w[members]
    return out


# ------------------------------------------------------------------ the induction
EmbedFn = Callable[[list[str]], np.ndarray]
RewriteFn = Callable[[list[tuple[str, str]]], list[str | None]]  # (masked headline, masked summary) -> principle or None


def induce_tree(
    anchors: pl.DataFrame,
    embed_fn: EmbedFn,
    params: ToEParams = ToEParams(),
    induction: InductionParams = InductionParams(),
    names: Mapping[str, Sequence[str]] | None = None,
    catalogue: Sequence[tuple[str, Sequence[str]]] = FACTORS,
    rewrite: RewriteFn | None = None,
) -> tuple[ExperienceTree, InductionReport]:
    """The initial tree from historical anchors (columns anchor_id, ticker, event_type, headline, summary).

    ``names``: ticker -> company names/aliases to mask (the first is the company name, whose first
    word is also masked as written). ``embed_fn``: texts -> (n, d) unit vectors.
    ``rewrite``: the LLM rewrite (None: the rule skeleton); a None answer falls back to the rule.
    """
    rep = InductionReport(rewrite="rule" if rewrite is None else "llm")
    factors = default_factors(catalogue)
    rep.per_factor = {f.name: 0 for f in factors}
    rows = anchors.select("anchor_id", "ticker", "event_type", "headline", "summary").sort("anchor_id").rows() if anchors.height else []
    rep.anchors = len(rows)
    names = names or {}
    masked_rows = []
    for aid, tk, et, head, summ in rows:
        masked_rows.append((masked(tk, head, names), masked(tk, summ, names)))
    skel = [m[0] for m in masked_rows]
    if rewrite is not None and rows:
        answers = rewrite(masked_rows)
        if len(answers) != len(rows):
            raise ValueError(f"the rewrite returned {len(answers)} answers for {len(rows)} items")
        for i, a in enumerate(answers):
            a = _WS.sub(" ", a or "").strip()
            if a:
                skel[i] = a
            else:
                rep.rewrite_fallbacks += 1
    # layer 1: group by factor; weight = anchors per (factor, skeleton)
    groups: dict[int, dict[str, int]] = {}
    for (aid, tk, et, head, summ), sk in zip(rows, skel):
        fi = assign_factor(factor_text(et, head, summ), factors)
        if fi is None or not sk:
            rep.unassigned += 1
            continue
        rep.per_factor[factors[fi].name] += 1
        groups.setdefault(fi, {})
        groups[fi][sk] = groups[fi].get(sk, 0) + 1
    texts = sorted({sk for g in groups.values() for sk in g})
    vecs = np.asarray(embed_fn(texts), dtype=np.float32) if texts else np.zeros((0, 1), np.float32)
    if len(vecs) != len(texts):
        raise ValueError(f"embed_fn returned {len(vecs)} vectors for {len(texts)} texts")
    row_of = {t: i for i, t in enumerate(texts)}
    next_id = 0
    for fi, fac in enumerate(factors):
        g = groups.get(fi)
        if not g:
            continue
        uniq = sorted(g)
        cl = threshold_clusters(vecs[[row_of[t] for t in uniq]], [g[t] for t in uniq], induction.cluster_threshold)
        rep.clusters += len(cl)
        kept = [(k, c) for k, c in enumerate(cl) if c[2] >= induction.min_support]
        rep.clusters_too_small += len(cl) - len(kept)
        kept.sort(key=lambda kc: (-kc[1][2], kc[0]))
        rep.clusters_over_cap += max(0, len(kept) - induction.max_leaves_per_factor)
        for _, (lead, members, weight) in kept[: induction.max_leaves_per_factor]:
            text = uniq[lead]
            fac.leaves.append(
                Leaf(
                    f"L{next_id:05d}",
                    fac.name,
                    text,
                    vecs[row_of[text]].copy(),
                    {h: float(params.q0) for h in params.horizons},
                    0,
                    0,
                    int(round(weight)),
                )
            )
            next_id += 1
    rep.leaves = next_id
    return ExperienceTree(factors, params), rep
