"""Deterministic event-type mapper over a news anchor (seed 000 App. A.1, Table 5).

The headline and summary are lower-cased; every cue of every type is counted with
word/phrase boundaries (each cue independently, so "FDA approval" counts both "fda" and
"fda approval"); the type with the largest count wins; no cue, or a tie at the top, gives
``Other/Mixed``. Only anchor text is used: no evidence, feedback or returns.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

EARNINGS = "Earnings & Guidance"
LEGAL = "Legal & Regulatory"
CAPITAL = "Capital & Transactions"
MANAGEMENT = "Management & Operations"
OTHER = "Other/Mixed"
EVENT_TYPES = (EARNINGS, LEGAL, CAPITAL, MANAGEMENT, OTHER)

# seed 000 Table 5, verbatim.
CUES: dict[str, tuple[str, ...]] = {
    EARNINGS: (
        "earnings",
        "EPS",
        "revenue",
        "sales",
        "quarter",
        "quarterly results",
        "fiscal Q",
        "beat",
        "miss",
        "guidance",
        "outlook",
        "forecast",
        "raises guidance",
        "cuts guidance",
        "margin",
        "EBITDA",
        "profit",
        "loss",
    ),
    LEGAL: (
        "lawsuit",
        "litigation",
        "class action",
        "investigation",
        "probe",
        "subpoena",
        "settlement",
        "fine",
        "penalty",
        "enforcement",
        "antitrust",
        "DOJ",
        "FTC",
        "FDA",
        "FDA approval",
        "regulatory approval",
        "recall",
        "compliance",
        "consent order",
    ),
    CAPITAL: (
        "merger",
        "acquisition",
        "M&A",
        "takeover",
        "buyout",
        "deal",
        "divestiture",
        "spin-off",
        "IPO",
        "offering",
        "secondary offering",
        "debt",
        "notes",
        "refinancing",
        "credit facility",
        "buyback",
        "repurchase",
        "dividend",
        "stake",
        "investment",
    ),
    MANAGEMENT: (
        "CEO",
        "CFO",
        "COO",
        "board",
        "appoints",
        "resigns",
        "departure",
        "management change",
        "partnership",
        "contract",
        "customer win",
        "product launch",
        "supply chain",
        "facility",
        "plant",
        "production",
        "layoffs",
        "restructuring",
        "workforce",
    ),
}


def _cue_pattern(cue: str) -> str:
    body = re.escape(cue.lower()).replace(r"\ ", r"\s+")
    if cue == "fiscal Q":  # "fiscal Q" is a prefix cue: fiscal Q1 … fiscal Q4, or "fiscal q" alone
        return r"(?<![\w])fiscal\s+q[1-4]?(?![\w])"
    return rf"(?<![\w]){body}(?![\w])"


@lru_cache(maxsize=1)
def _compiled() -> dict[str, list[re.Pattern]]:
    return {t: [re.compile(_cue_pattern(c)) for c in cues] for t, cues in CUES.items()}


def cue_counts(text: str) -> dict[str, int]:
    """Number of Table 5 cue matches per event type in ``text`` (case-insensitive)."""
    low = (text or "").lower()
    return {t: sum(len(p.findall(low)) for p in pats) for t, pats in _compiled().items()}


def classify(headline: str, summary: str = "") -> tuple[str, dict[str, int]]:
    """Event type by the largest cue count over headline + summary; ties / none → Other/Mixed."""
    counts = cue_counts(f"{headline or ''}\n{summary or ''}")
    top = max(counts.values())
    winners = [t for t, n in counts.items() if n == top]
    if top == 0 or len(winners) > 1:
        return OTHER, counts
    return winners[0], counts


def classify_json(headline: str, summary: str = "") -> tuple[str, str]:
    """:func:`classify` with the counts serialised (sorted keys) for a table column."""
    t, counts = classify(headline, summary)
    return t, json.dumps(counts, sort_keys=True)
