"""Matured feedback: reader predictions joined to residual labels, with the credited families.

One row per (anchor, horizon) whose horizon has matured by ``as_of_day`` — never earlier. The
``applied`` rows are what the source memory adds: correct → a += w_y, wrong → b += w_y, split
across the distinct credited families. Credit goes to the families of the valid cited IDs
(``cited``) or, for the top-5 all-source check, to every family in the final top-5 context
(``top5``). Labels that could not be computed (insufficient history, missing price) give no update.
"""

from __future__ import annotations

import datetime as dt
import hashlib

import numpy as np
import polars as pl
import pyarrow as pa

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
            pa.field("outcome", pa.string(), nullable=False),  # applied | no_valid_citation | label_unavailable
        ]
    ),
    ("variant", "date"),
    ("anchor_id", "horizon"),
    "Lineage of every memory update: anchor, horizon, prediction, label, credited families, weight (keyed by decision day).",
)

FEEDBACK_COLUMNS = [f.name for f in FEEDBACK.schema]


_EMPTY_SCHEMA = pl.from_arrow(FEEDBACK.schema.empty_table()).schema


def empty_feedback() -> pl.DataFrame:
    return pl.DataFrame(schema=_EMPTY_SCHEMA)


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


def build_feedback(
    outputs: pl.DataFrame,
    labels: pl.DataFrame,
    contexts: pl.DataFrame,
    as_of_day: dt.date,
    weights: dict[str, dict[int, float]],
    memory_key: dict[str, str],
    credit: str = "cited",
) -> pl.DataFrame:
    """Feedback rows of one decision day's reader outputs whose labels matured by ``as_of_day``.

    ``outputs``: reader_outputs rows; ``labels``: that day's labels (ticker, horizon, maturity_day,
    status, y, z); ``contexts``: anchor_id, source_family of the final top-M (for credit="top5").
    """
    if outputs.height == 0:
        return empty_feedback()
    # `pending` means close(D+h) is not in prices: not matured in the data, whatever the calendar says
    # (the end of a historical data set); such feedback simply does not exist yet.
    lab = labels.filter((pl.col("maturity_day") <= as_of_day) & (pl.col("status") != "pending"))
    lab = lab.select("ticker", "horizon", "maturity_day", "status", "y", "z")
    j = outputs.join(lab, on=["ticker", "horizon"], how="inner")
    if j.height == 0:
        return empty_feedback()
    top5 = {}
    if credit == "top5" and contexts.height:
        top5 = {a: sorted(set(g["source_family"].to_list())) for (a,), g in contexts.group_by(["anchor_id"])}
    cols: dict[str, list] = {name: [] for name in FEEDBACK_COLUMNS}  # built by column: one DataFrame at the end
    for r in j.iter_rows(named=True):
        fams = sorted(set(r["cited_families"])) if credit == "cited" else top5.get(r["anchor_id"], [])
        ok = r["status"] == "ok"
        y = r["y"] if ok else None
        correct = (r["signal"] == y) if ok else None
        w = weights.get(r["horizon"], {}).get(int(y), 1.0) if ok else 0.0
        if not ok:
            outcome = "label_unavailable"
        elif not fams:
            outcome = "no_valid_citation"
        else:
            outcome = "applied"
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
        for name, v in row.items():
            cols[name].append(v)
    return pl.DataFrame(cols, schema=_EMPTY_SCHEMA)


def label_frequencies(labels: pl.DataFrame) -> dict[str, dict[int, float]]:
    """π_y per horizon over ok labels."""
    out: dict[str, dict[int, float]] = {}
    ok = labels.filter(pl.col("status") == "ok")
    for (h,), g in ok.group_by(["horizon"]):
        n = g.height
        out[h] = {y: g.filter(pl.col("y") == y).height / n for y in (-1, 0, 1)}
    return out
