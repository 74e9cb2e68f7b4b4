"""The reader's JSON output schema (seed 000 App. B), built per prompt.

The ``ids`` items are an enum of the retrieved evidence IDs of *this* prompt, arrays have
``maxItems`` and strings ``maxLength``, and no extra properties are allowed — so constrained
decoding cannot emit an ID that was not retrieved, whatever the evidence text says.
"""

from __future__ import annotations

from ..events import EVENT_TYPES
from ..settings import HORIZON_KEYS

MAX_REASON = 300
MAX_UNCERTAINTY = 300


def horizon_schema(allowed_ids: list[str], max_ids: int) -> dict:
    ids_items: dict = {"type": "string", "enum": list(allowed_ids)} if allowed_ids else {"type": "string", "maxLength": 0}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["signal", "ids", "reason"],
        "properties": {
            "signal": {"type": "integer", "enum": [-1, 0, 1]},
            "ids": {"type": "array", "items": ids_items, "maxItems": max_ids if allowed_ids else 0, "uniqueItems": True},
            "reason": {"type": "string", "maxLength": MAX_REASON},
        },
    }


def stances_schema(allowed_ids: list[str]) -> dict:
    """The ``stances`` object of the passage-stance credit (``memory.credit = "passage_stance"``):
    evidence ID → that passage's own stance −1/0/+1; only this prompt's IDs are keys."""
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {i: {"type": "integer", "enum": [-1, 0, 1]} for i in allowed_ids},
    }


def output_schema(allowed_ids: list[str], max_ids: int | None = None, stances: bool = False) -> dict:
    """JSON schema of one reader answer for a prompt whose evidence IDs are ``allowed_ids``.

    ``stances`` (only with ``memory.credit = "passage_stance"``, an extension beyond seed 000): the
    answer also holds ``stances``, each evidence passage's own stance. Without it the schema is
    seed 000 App. B's, unchanged."""
    max_ids = max_ids if max_ids is not None else max(1, len(allowed_ids))
    out = {
        "type": "object",
        "additionalProperties": False,
        "required": ["event_type", "signals", "main_uncertainty"],
        "properties": {
            "event_type": {"type": "string", "enum": list(EVENT_TYPES)},
            "signals": {
                "type": "object",
                "additionalProperties": False,
                "required": list(HORIZON_KEYS),
                "properties": {h: horizon_schema(allowed_ids, max_ids) for h in HORIZON_KEYS},
            },
            "main_uncertainty": {"type": "string", "maxLength": MAX_UNCERTAINTY},
        },
    }
    if stances:
        out["required"].append("stances")
        out["properties"]["stances"] = stances_schema(allowed_ids)
    return out
