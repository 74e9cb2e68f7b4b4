"""Matured feedback: reader predictions joined to residual labels, with the credited families.

One row per (anchor, horizon) whose horizon has matured by ``as_of_day`` — never earlier. The
``applied`` rows are what the source memory adds: correct → a += w_y, wrong → b += w_y, split
across the distinct credited families. Credit goes to the families of the valid cited IDs
(``cited``) or, for the top-5 all-source check, to every family in the final top-5 context
(``top5``). Labels that could not be computed (insufficient history, missing price) give no update.

``rule = "passage_stance"`` (``memory.credit``, an extension beyond seed 000's App. C; docs/method.md
§4, "Credit by passage stance"): every passage the reader gave a stance (−1/0/+1, the answer's
``stances``) is credited to its own family by whether that stance equals the label — right → a,
wrong → b — whatever the answer was; w_y is split equally across those passages. The rows then
also carry ``stance_passages``, ``stances``, ``families_right`` and ``families_wrong`` (one entry per
credited passage), columns that the default rule does not write.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from ..reader.parse import parse_output
from ..reader.prompt import prompt_ids
from ..storage.schemas import TableSpec

FEEDBACK = TableSpec(
    "feedback",
    pa.schema(
        [
            pa.field("anchor_id", pa.string(), nullable=False),
            pa.field("ticker", pa.string(), nullable=False),
            pa.field("event_type", pa.string(), nullable=False),
            pa.field("memory_event_type", pa.string(), nullable=False),
            pa.field("horizon", pa.string(), nullable=False),
            pa.field("maturity_day", pa.date32(), nullable=False),
            pa.field("prediction", pa.int8(), nullable=False),
            pa.field("label", pa.int8(), nullable=True),
            pa.field("z", pa.float64(), nullable=True),
            pa.field("label_status", pa.string(), nullable=False),
            pa.field("correct", pa.bool_(), nullable=True),
            pa.field("families", pa.list_(pa.string()), nullable=False),
            pa.field("weight", pa.float64(), nullable=False),
            pa.field("applied", pa.bool_(), nullable=False),
            pa.field("outcome", pa.string(), nullable=False),  # applied | no_valid_citation | no_stance | label_unavailable
            # memory.credit = "passage_stance" only (an extension; absent from the default's files):
            pa.field("stance_passages", pa.list_(pa.string()), nullable=True),  # passages with a stance, context order
            pa.field("stances", pa.list_(pa.int8()), nullable=True),  # their stances, parallel
            pa.field("families_right", pa.list_(pa.string()), nullable=True),  # one entry per passage whose stance = label
            pa.field("families_wrong", pa.list_(pa.string()), nullable=True),  # one entry per passage whose stance != label
        ]
    ),
    ("variant", "date"),
    ("anchor_id", "horizon"),
    "Lineage of every memory update: anchor, horizon, prediction, label, credited families, weight (keyed by decision day).",
    optional=("stance_passages", "stances", "families_right", "families_wrong"),
)

CREDIT_RULES = ("cited_correct", "passage_stance")  # settings.memory.credit
STANCE_COLUMNS = list(FEEDBACK.optional)
FEEDBACK_COLUMNS = [f.name for f in FEEDBACK.schema if f.name not in FEEDBACK.optional]

_FULL_SCHEMA = pl.from_arrow(FEEDBACK.schema.empty_table()).schema
_EMPTY_SCHEMA = pl.Schema({k: v for k, v in _FULL_SCHEMA.items() if k in FEEDBACK_COLUMNS})


def _schema(rule: str) -> pl.Schema:
    if rule not in CREDIT_RULES:
        raise ValueError(f"unknown memory.credit {rule!r}; choose from {CREDIT_RULES}")
    return _FULL_SCHEMA if rule == "passage_stance" else _EMPTY_SCHEMA


def empty_feedback(rule: str = "cited_correct") -> pl.DataFrame:
    return pl.DataFrame(schema=_schema(rule))


def context_stances(raw: str, context: list[tuple[str, str]]) -> list[tuple[str, str, int]]:
    """(passage_id, family, stance) of each passage the answer ``raw`` gave a stance, in context
    order. ``context``: the anchor's (passage_id, source_family) by position, from which the prompt
    IDs (N1…, F1…) are rebuilt exactly as the prompt assigned them."""
    ids = prompt_ids([f for _, f in context])
    st = parse_output(raw, ids).stances
    return [(pid, fam, st[i]) for i, (pid, fam) in zip(ids, context) if i in st]


def stance_credit(stanced: list[tuple[str, str, int]], y: int) -> tuple[list[str], list[str]]:
    """(families_right, families_wrong): one entry per passage, right when its stance equals the
    label y (all three values count: a neutral stance is right on a neutral label and wrong on a
    ±1 label, as seed 000's correctness treats a neutral answer)."""
    right = [fam for _, fam, st in stanced if st == y]
    wrong = [fam for _, fam, st in stanced if st != y]
    return right, wrong


def shuffle_labels(labels: pl.DataFrame, seed: int) -> pl.DataFrame:
    """Permute y (and z) among the ok labels of each (decision day, horizon) batch, seeded."""
    out = []
    for (d, h), g in labels.group_by(["date", "horizon"], maintain_order=True):
        ok = g.filter(pl.col("status") == "ok").sort("ticker")
        rest = g.filter(pl.col("status") != "ok")
        if ok.height > 1:
            s = int.from_bytes(hashlib.sha256(f"{seed}:{d}:{h}".encode()).digest()[:8], "little")
            perm = np.random.default_rng(s).permutation(ok.height)
            ok = ok.with_columns(pl.Series("y", ok["y"].to_numpy()[perm], dtype=pl.Int8), pl.Series("z", ok["z"].to_numpy()[perm]))
        out += [ok, rest]
    return pl.concat(out) if out else labels


def _families_in_context(contexts: pl.DataFrame, family_of=None) -> dict[str, list[str]]:
    """anchor_id -> the sorted families of its final top-M (credit="top5"), by ``family_of`` when given."""
    if family_of is None:
        return {a: sorted(set(g["source_family"].to_list())) for (a,), g in contexts.group_by(["anchor_id"])}
    return {
        a: sorted({family_of.family(p, f) for p, f in zip(g["passage_id"].to_list(), g["source_family"].to_list())})
        for (a,), g in contexts.group_by(["anchor_id"])
    }


def _contexts_in_order(contexts: pl.DataFrame) -> dict[str, list[tuple[str, str]]]:
    """anchor_id -> its context's (passage_id, source_family) in prompt order (the IDs stances name)."""
    c = contexts.sort(["anchor_id", "position"])
    out: dict[str, list[tuple[str, str]]] = {}
    for a, p, f in zip(c["anchor_id"].to_list(), c["passage_id"].to_list(), c["source_family"].to_list()):
        out.setdefault(a, []).append((p, f))
    return out


@dataclass(frozen=True)
class CreditRule:
    """Who an answer credits (seed 000 App. C): ``credit`` ``cited``/``top5``, ``rule``
    (``memory.credit``) and ``family_of``, the :class:`.families.FamilyMap` of the memory's families."""

    credit: str = "cited"
    rule: str = "cited_correct"
    family_of: object = None


def build_feedback(
    outputs: pl.DataFrame,
    labels: pl.DataFrame,
    contexts: pl.DataFrame,
    as_of_day: dt.date,
    weights: dict[str, dict[int, float]],
    memory_key: dict[str, str],
    how: CreditRule = CreditRule(),
) -> pl.DataFrame:
    """Feedback rows of one decision day's reader outputs whose labels matured by ``as_of_day``.

    ``outputs``: reader_outputs rows; ``labels``: that day's labels (ticker, horizon, maturity_day,
    status, y, z); ``contexts``: anchor_id, passage_id, source_family, position of the final top-M
    (for credit="top5", and for rule="passage_stance": the prompt IDs the stances name).
    ``how.credit`` picks the families the answer's correctness credits under seed 000's rule
    (``cited``/``top5``); ``how.rule = "passage_stance"`` credits every context passage the answer gave
    a stance instead, cited or not (so ``cited`` and ``top5`` credit the same passages under it).
    ``how.family_of``: a :class:`.families.FamilyMap` naming the memory family each credited passage
    counts for (None or ``seed000``: its ``source_family``, seed 000's two families).
    """
    credit, rule, family_of = how.credit, how.rule, how.family_of
    fine = family_of is not None and not family_of.identity
    schema = _schema(rule)
    stance = rule == "passage_stance"
    if outputs.height == 0:
        return empty_feedback(rule)
    # `pending` means close(D+h) is not in prices: not matured in the data, whatever the calendar says
    # (the end of a historical data set); such feedback simply does not exist yet.
    lab = labels.filter((pl.col("maturity_day") <= as_of_day) & (pl.col("status") != "pending"))
    lab = lab.select("ticker", "horizon", "maturity_day", "status", "y", "z")
    j = outputs.join(lab, on=["ticker", "horizon"], how="inner")
    if j.height == 0:
        return empty_feedback(rule)
    top5 = _families_in_context(contexts, family_of if fine else None) if credit == "top5" and contexts.height else {}
    ctx = _contexts_in_order(contexts) if stance and contexts.height else {}
    stanced_of: dict[tuple[str, str], list] = {}  # (anchor, raw answer) -> its stances: parsed once for the horizons
    cols: dict[str, list] = {name: [] for name in schema}  # built by column: one DataFrame at the end
    for r in j.iter_rows(named=True):
        ok = r["status"] == "ok"
        y = r["y"] if ok else None
        correct = (r["signal"] == y) if ok else None
        w = weights.get(r["horizon"], {}).get(int(y), 1.0) if ok else 0.0
        if stance:
            key = (r["anchor_id"], r["raw_json"])
            if key not in stanced_of:
                st_ = context_stances(r["raw_json"], ctx.get(r["anchor_id"], []))
                stanced_of[key] = [(p, family_of.family(p, f), v) for p, f, v in st_] if fine else st_
            stanced = stanced_of[key]
            right, wrong = stance_credit(stanced, y) if ok else ([], [])
            fams = sorted({fam for _, fam, _ in stanced})
        elif credit != "cited":
            fams = top5.get(r["anchor_id"], [])
        elif fine:
            fams = sorted({family_of.family(p, f) for p, f in zip(r["valid_passages"], r["cited_families"])})
        else:
            fams = sorted(set(r["cited_families"]))
        outcome = "label_unavailable" if not ok else ("applied" if fams else ("no_stance" if stance else "no_valid_citation"))
        row = {
            "anchor_id": r["anchor_id"],
            "ticker": r["ticker"],
            "event_type": r["event_type"],
            "memory_event_type": memory_key.get(r["anchor_id"], r["event_type"]),
            "horizon": r["horizon"],
            "maturity_day": r["maturity_day"],
            "prediction": r["signal"],
            "label": y,
            "z": r["z"] if ok else None,
            "label_status": r["status"],
            "correct": correct,
            "families": fams,
            "weight": float(w),
            "applied": outcome == "applied",
            "outcome": outcome,
        }
        if stance:
            row.update(stance_passages=[p for p, _, _ in stanced], stances=[st for _, _, st in stanced], families_right=right, families_wrong=wrong)
        for name, v in row.items():
            cols[name].append(v)
    return pl.DataFrame(cols, schema=schema)


def label_frequencies(labels: pl.DataFrame) -> dict[str, dict[int, float]]:
    """π_y per horizon over ok labels."""
    out: dict[str, dict[int, float]] = {}
    ok = labels.filter(pl.col("status") == "ok")
    for (h,), g in ok.group_by(["horizon"]):
        n = g.height
        out[h] = {y: g.filter(pl.col("y") == y).height / n for y in (-1, 0, 1)}
    return out
