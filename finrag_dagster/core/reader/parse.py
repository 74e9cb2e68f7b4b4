"""Parse a reader's raw text into per-horizon signals (docs/method.md §6).

Invalid JSON, a missing horizon or an out-of-range value → that horizon is 0 with no valid
citation; hallucinated (not retrieved) or duplicate IDs are dropped; the raw text is kept by the
caller. Never raises on model output.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..settings import HORIZON_KEYS

_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.I)


@dataclass
class HorizonOut:
    signal: int = 0
    cited_ids: list[str] = field(default_factory=list)  # as emitted (strings only)
    valid_ids: list[str] = field(default_factory=list)  # retrieved, de-duplicated, in order
    reason: str = ""
    ok: bool = False  # horizon present with an in-range signal


@dataclass
class ParsedOutput:
    valid_json: bool
    event_type: str
    main_uncertainty: str
    horizons: dict[str, HorizonOut]
    # evidence ID -> its own stance (-1/0/+1), when the answer has ``stances`` (the passage-stance
    # credit, docs/method.md §4); IDs that were not retrieved and out-of-range values are dropped
    stances: dict[str, int] = field(default_factory=dict)


def _load(raw: str):
    text = _FENCE.sub("", raw or "").strip()
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError, ValueError):
        pass
    a, b = text.find("{"), text.rfind("}")
    if 0 <= a < b:
        try:
            return json.loads(text[a : b + 1])
        except (json.JSONDecodeError, ValueError):
            return None
    return None


def _signal(v) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int) and v in (-1, 0, 1):
        return v
    if isinstance(v, float) and v in (-1.0, 0.0, 1.0):
        return int(v)
    if isinstance(v, str) and v.strip() in ("-1", "0", "+1", "1"):
        return int(v.strip())
    return None


def parse_output(raw: str, allowed_ids: list[str]) -> ParsedOutput:
    allowed = set(allowed_ids)
    data = _load(raw)
    empty = {h: HorizonOut() for h in HORIZON_KEYS}
    if not isinstance(data, dict):
        return ParsedOutput(False, "", "", empty)
    signals = data.get("signals")
    out: dict[str, HorizonOut] = {}
    for h in HORIZON_KEYS:
        node = signals.get(h) if isinstance(signals, dict) else None
        if not isinstance(node, dict):
            out[h] = HorizonOut()
            continue
        sig = _signal(node.get("signal"))
        ids = node.get("ids")
        cited = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
        reason = node.get("reason") if isinstance(node.get("reason"), str) else ""
        if sig is None:
            out[h] = HorizonOut(0, cited, [], reason, False)
            continue
        valid: list[str] = []
        for i in cited:
            if i in allowed and i not in valid:
                valid.append(i)
        out[h] = HorizonOut(sig, cited, valid, reason, True)
    et = data.get("event_type") if isinstance(data.get("event_type"), str) else ""
    mu = data.get("main_uncertainty") if isinstance(data.get("main_uncertainty"), str) else ""
    return ParsedOutput(True, et, mu, out, parse_stances(data.get("stances"), allowed))


def parse_stances(node, allowed: set[str]) -> dict[str, int]:
    """Evidence ID -> stance from an answer's ``stances`` object: retrieved IDs with a value in
    −1/0/+1 only (anything else is dropped, never guessed)."""
    if not isinstance(node, dict):
        return {}
    out = {}
    for k, v in node.items():
        st = _signal(v)
        if isinstance(k, str) and k in allowed and st is not None:
            out[k] = st
    return out
