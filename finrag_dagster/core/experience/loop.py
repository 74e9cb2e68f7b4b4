"""Tree-of-Experience inside the main pipeline (seed 002 eqs 6-13 on seed 000's anchors).

For a ``toe`` variant on decision day D: tree(D) = tree(D−1) + the eq. 13 updates of labels matured
on D−1 (or the induced prior tree at a split start); :func:`choose_principles` selects a path per
anchor (in anchor_id order) for its state, the masked headline skeleton and its MiniLM vector, with
S = ρ·mean_h Q_h, the embedded judge expanding under a cap; the principle goes into the reader's
prompt (:func:`prompt_text`); when horizon h matures, :func:`toe_updates` applies eq. 13 with
r = sign(signal_h) · ε_h, the residual return of the label. Everything here is a pure function of
its inputs and the tree it is handed (which it mutates). Step by step: docs/experience.md,
"ToE inside the main pipeline".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from ..storage.schemas import TableSpec
from .induction import factor_text, masked
from .tree import ExperienceTree

PRINCIPLE_SELECTIONS = TableSpec(
    "principle_selections",
    pa.schema(
        [
            pa.field("anchor_id", pa.string(), nullable=False),
            pa.field("state", pa.string(), nullable=False),  # the anchor's masked skeleton (eq. 3)
            pa.field("leaf_id", pa.string(), nullable=True),  # null: no principle
            pa.field("factor", pa.string(), nullable=True),
            pa.field("rho", pa.float64(), nullable=False),
            pa.field("score", pa.float64(), nullable=False),  # S = rho * mean_h Q_h (0 for a new leaf)
            pa.field("q", pa.list_(pa.float64()), nullable=True),  # Q per horizon when selected
            pa.field("outcome", pa.string(), nullable=False),  # reused | expanded | no_factor | factor_full
            pa.field("judge", pa.string(), nullable=False),  # rule | llm | llm_fallback (the LLM answer was invalid)
            pa.field("judge_error", pa.string(), nullable=True),  # why the LLM answer was not used
        ]
    ),
    ("variant", "date"),
    ("anchor_id",),
    "The experience-tree path each anchor of decision day D used (seed 002 eqs 6-11) and whether the judge expanded.",
    decision_time=True,
)

PRINCIPLE_UPDATES = TableSpec(
    "principle_updates",
    pa.schema(
        [
            pa.field("anchor_id", pa.string(), nullable=False),
            pa.field("decision_day", pa.date32(), nullable=False),
            pa.field("horizon", pa.string(), nullable=False),
            pa.field("leaf_id", pa.string(), nullable=False),
            pa.field("signal", pa.int8(), nullable=False),
            pa.field("epsilon", pa.float64(), nullable=True),  # residual return over the horizon
            pa.field("reward", pa.float64(), nullable=True),  # sign(signal) * epsilon
            pa.field("q_before", pa.float64(), nullable=False),
            pa.field("q_after", pa.float64(), nullable=False),
            pa.field("outcome", pa.string(), nullable=False),  # applied | neutral_signal | label_unavailable
        ]
    ),
    ("variant", "date"),
    ("decision_day", "anchor_id", "horizon"),
    "Eq. 13 updates that entered the tree used on D (labels matured on D-1), with their reward.",
    decision_time=True,
)

SELECTION_SCHEMA = pl.from_arrow(PRINCIPLE_SELECTIONS.schema.empty_table()).schema
UPDATE_SCHEMA = pl.from_arrow(PRINCIPLE_UPDATES.schema.empty_table()).schema


@dataclass(frozen=True)
class Principle:
    """What the reader gets: the principle's text (with its utilities) and Q_h / q0 per horizon."""

    text: str
    weights: tuple[float, ...]  # Q_h / q0 in the tree's horizon order


def anchor_states(anchors: pl.DataFrame, names: Mapping[str, Sequence[str]]) -> tuple[list[str], list[str], list[str]]:
    """(anchor ids sorted, layer-1 texts, masked skeletons) — the induction's eq. 3 rule applied
    to the anchors of a day, so states and leaves live in the same space."""
    if anchors.height == 0:
        return [], [], []
    rows = anchors.select("anchor_id", "ticker", "event_type", "headline", "summary").sort("anchor_id").rows()
    ids, f_texts, skels = [], [], []
    for aid, tk, et, head, summ in rows:
        ids.append(aid)
        f_texts.append(factor_text(et, head, summ))
        skels.append(masked(tk, head, names) or masked(tk, summ, names) or (head or ""))
    return ids, f_texts, skels


def prompt_text(principle: str, q: Mapping[str, float], horizons: Sequence[str], q0: float) -> str:
    """The principle as the reader's prompt shows it (its utilities included)."""
    qs = ", ".join(f"{h} {q[h]:.2f}" for h in horizons)
    return (
        f"{principle} (utility of this perspective by horizon: {qs}; {q0:g} is neutral, above {q0:g} it has "
        f"paid off after similar news, below it has not)"
    )


def _judge_verdicts(tree: ExperienceTree, factor_texts: list[str], skeletons: list[str], vecs: list[np.ndarray], judge, cache) -> list:
    """The LLM judge's verdict per anchor (None: not asked), in one batch against the tree as it
    stood before the day; anchors without a factor are not asked."""
    verdicts = [None] * len(vecs)
    if judge is not None and vecs:
        pre = [tree.select(factor_texts[i], vecs[i], None, count=False) for i in range(len(vecs))]
        leaves = {x.leaf_id: x for x in tree.leaves()}
        items = [
            (skeletons[i], s.factor.name if s.factor else "", [(lid, leaves[lid].principle, sc) for lid, sc in s.candidates])
            for i, s in enumerate(pre)
        ]
        ask = [i for i, s in enumerate(pre) if s.factor is not None]
        answers = judge([items[i] for i in ask], cache) if ask else []
        for i, a in zip(ask, answers):
            verdicts[i] = a
    return verdicts


def _new_principle_vectors(verdicts: list, embed_fn) -> dict:
    """The embeddings of the principles the LLM judge expands with, by text."""
    new_text = [v.principle for v in verdicts if v is not None and v.ok and v.decision == "expand"]
    new_vecs = dict(zip(new_text, embed_fn(new_text))) if new_text and embed_fn is not None else {}
    if new_text and embed_fn is None:
        raise ValueError("an LLM judge that expands needs embed_fn for the new principles")
    return new_vecs


def _path_leaf(tree: ExperienceTree, sel, v, *, skeleton: str, vec: np.ndarray, new_vecs: dict, expansion_cap: int) -> tuple:
    """(leaf or None, outcome) of one anchor: the judge's reuse, else the selected leaf (seed 002
    eqs 6-11); without one, a new leaf under the best factor (the LLM's principle, or the anchor's
    skeleton) unless there is no factor or it holds ``expansion_cap`` leaves."""
    leaf, outcome = sel.leaf, "reused"
    if v is not None and v.ok and v.decision == "reuse":
        leaf = next(x for x in tree.leaves() if x.leaf_id == v.leaf_id)
    elif v is not None and v.ok and v.decision == "expand":
        leaf = None
    if leaf is None:
        if sel.factor is None:
            outcome = "no_factor"
        elif len(sel.factor.leaves) >= expansion_cap:
            outcome = "factor_full"
        else:
            text, lv = skeleton, vec
            if v is not None and v.ok and v.decision == "expand":
                text, lv = v.principle, np.asarray(new_vecs[v.principle], dtype=np.float32)
            leaf = tree.expand(sel.factor, text, lv)
            outcome = "expanded"
    return leaf, outcome


def _path_score(tree: ExperienceTree, sel, leaf) -> tuple[float, float]:
    """(rho, S) of the leaf used: the selection's own for its best leaf; otherwise the candidate's S
    (0 for a new leaf) and rho from S = rho * mean_h Q_h."""
    score = float(sel.score) if sel.leaf is leaf else next((float(sc) for lid, sc in sel.candidates if lid == leaf.leaf_id), 0.0)
    u = tree.utility(leaf, None)
    rho = float(sel.rho) if sel.leaf is leaf else (score / u if u > 0 else 0.0)  # S = rho * mean_h Q_h
    return rho, score


@dataclass(frozen=True)
class AnchorStates:
    """A day's anchors as the tree sees them, in order: ids, layer-1 texts, masked skeletons and the skeletons' vectors (one row each)."""

    anchor_ids: list[str]
    factor_texts: list[str]
    skeletons: list[str]
    embeddings: np.ndarray


def choose_principles(
    tree: ExperienceTree,
    states: AnchorStates,
    expansion_cap: int,
    judge=None,
    embed_fn=None,
    cache=None,
) -> tuple[pl.DataFrame, dict[str, Principle]]:
    """Select (or expand) a path per anchor of ``states`` in its order; mutates the tree (recall counts,
    new leaves). Returns the selection rows and anchor_id → :class:`Principle` for the prompt.

    ``judge`` (an :func:`.llm.llm_judge`): the day's anchors are judged in one batch
    against the tree as it stood before the day (candidates = the leaves that cleared the
    threshold); reuse takes the named leaf, expand adds the LLM's principle (embedded with
    ``embed_fn``) under the best factor. An invalid answer falls back to the rule judge, recorded
    as ``llm_fallback`` with the reason. Without a judge: the rule (expand iff nothing cleared)."""
    anchor_ids, factor_texts, skeletons, embeddings = states.anchor_ids, states.factor_texts, states.skeletons, states.embeddings
    p = tree.params
    hs = list(p.horizons)
    vecs = [np.asarray(embeddings[i], dtype=np.float32) for i in range(len(anchor_ids))]
    verdicts = _judge_verdicts(tree, factor_texts, skeletons, vecs, judge, cache)
    new_vecs = _new_principle_vectors(verdicts, embed_fn)
    rows, out = [], {}
    for i, aid in enumerate(anchor_ids):
        sel = tree.select(factor_texts[i], vecs[i], None, count=False)
        v = verdicts[i]
        leaf, outcome = _path_leaf(tree, sel, v, skeleton=skeletons[i], vec=vecs[i], new_vecs=new_vecs, expansion_cap=expansion_cap)
        how, err = ("rule", None) if v is None else (("llm", None) if v.ok else ("llm_fallback", v.error))
        row = {"anchor_id": aid, "state": skeletons[i], "leaf_id": None, "factor": None, "rho": 0.0, "score": 0.0, "q": None}
        if leaf is None:
            row["factor"] = sel.factor.name if sel.factor else None
        else:
            leaf.n_recall += 1
            q = [float(leaf.q[h]) for h in hs]
            rho, score = _path_score(tree, sel, leaf)
            row.update(leaf_id=leaf.leaf_id, factor=leaf.factor, rho=rho, score=score, q=q)
            out[aid] = Principle(prompt_text(leaf.principle, leaf.q, hs, p.q0), tuple(x / p.q0 for x in q))
        rows.append({**row, "outcome": outcome, "judge": how, "judge_error": err})
    return pl.DataFrame(rows, schema=SELECTION_SCHEMA), out


def toe_updates(
    tree: ExperienceTree,
    decision_day: str,
    horizon: str,
    selections: pl.DataFrame,
    outputs: pl.DataFrame,
    labels: pl.DataFrame,
) -> pl.DataFrame:
    """Eq. 13 for the anchors of ``decision_day`` at ``horizon`` (its label has matured): one row
    per anchor that used a principle, in anchor_id order; mutates the tree."""
    sel = selections.filter(pl.col("leaf_id").is_not_null()).select("anchor_id", "leaf_id")
    if sel.height == 0:
        return pl.DataFrame(schema=UPDATE_SCHEMA)
    o = outputs.filter(pl.col("horizon") == horizon).select("anchor_id", "ticker", "signal")
    lab = labels.filter(pl.col("horizon") == horizon).select("ticker", "status", "epsilon")
    j = sel.join(o, on="anchor_id", how="inner").join(lab, on="ticker", how="left").sort("anchor_id")
    day = dt.date.fromisoformat(decision_day)
    rows = []
    leaves = {leaf.leaf_id: leaf for leaf in tree.leaves()}
    for aid, leaf_id, _tk, signal, status, eps in j.rows():
        leaf = leaves.get(leaf_id)
        if leaf is None:
            raise ValueError(f"anchor {aid}: leaf {leaf_id} is not in the tree it was selected from")
        q0 = float(leaf.q[horizon])
        row = {
            "anchor_id": aid,
            "decision_day": day,
            "horizon": horizon,
            "leaf_id": leaf_id,
            "signal": int(signal),
            "epsilon": eps if status == "ok" else None,
            "reward": None,
            "q_before": q0,
            "q_after": q0,
        }
        if status != "ok" or eps is None:
            row["outcome"] = "label_unavailable"
        elif signal == 0:
            row["outcome"] = "neutral_signal"
            row["reward"] = 0.0
        else:
            r = float(np.sign(signal)) * float(eps)
            row["reward"] = r
            row["q_after"] = tree.update(leaf_id, horizon, r)
            row["outcome"] = "applied"
        rows.append(row)
    return pl.DataFrame(rows, schema=UPDATE_SCHEMA)


def empty_selections() -> pl.DataFrame:
    return pl.DataFrame(schema=SELECTION_SCHEMA)


def empty_updates() -> pl.DataFrame:
    return pl.DataFrame(schema=UPDATE_SCHEMA)
