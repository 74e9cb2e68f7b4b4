"""Read one decision day: prompts from contexts, cache lookups, backend calls, parsed rows."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa

from ..settings import HORIZON_KEYS
from ..storage.schemas import TableSpec
from .backends import Backend, Request, key_decoding
from .cache import PromptCache
from .embedded import ReaderInput
from .parse import parse_output
from .prompt import AnchorInfo, EvidenceItem, build_prompt
from .redaction import redact_secrets

READER_OUTPUTS = TableSpec(
    "reader_outputs",
    pa.schema(
        [
            pa.field("anchor_id", pa.string(), nullable=False),
            pa.field("ticker", pa.string(), nullable=False),
            pa.field("event_type", pa.string(), nullable=False),
            pa.field("horizon", pa.string(), nullable=False),
            pa.field("signal", pa.int8(), nullable=False),
            pa.field("cited_ids", pa.list_(pa.string()), nullable=False),
            pa.field("valid_ids", pa.list_(pa.string()), nullable=False),
            pa.field("valid_passages", pa.list_(pa.string()), nullable=False),
            pa.field("cited_families", pa.list_(pa.string()), nullable=False),
            pa.field("reason", pa.string(), nullable=False),
            pa.field("valid_json", pa.bool_(), nullable=False),
            pa.field("horizon_ok", pa.bool_(), nullable=False),
            pa.field("raw_json", pa.string(), nullable=False),
            pa.field("prompt_hash", pa.string(), nullable=False),
            pa.field("backend", pa.string(), nullable=False),
            pa.field("model", pa.string(), nullable=False),
            pa.field("prompt_tokens", pa.int64(), nullable=False),
            pa.field("output_tokens", pa.int64(), nullable=False),
        ]
    ),
    ("variant", "date"),
    ("anchor_id", "horizon"),
    "Reader signals per anchor and horizon with cited evidence (raw answer kept).",
    decision_time=True,
)


@dataclass
class DayStats:
    anchors: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    valid_json: int = 0
    horizons: int = 0
    horizons_with_valid_citation: int = 0
    horizons_citing_anything: int = 0
    label_mix: dict = field(default_factory=lambda: {h: {-1: 0, 0: 0, 1: 0} for h in HORIZON_KEYS})
    prompt_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    errors: list = field(default_factory=list)
    # backend figures for this day (differences of the backend's running totals)
    requests: int = 0  # requests sent (HTTP requests, retries included, for openai)
    retries: int = 0
    failures: int = 0  # prompts that finally failed (after their retries)
    anchors_completed: int = 0  # anchors with an answer (cached or new); the others are in failed_anchors
    failed_anchors: dict = field(default_factory=dict)  # anchor_id -> its (redacted) backend error

    def merge(self, o: "DayStats") -> None:
        for k in (
            "anchors",
            "cache_hits",
            "cache_misses",
            "valid_json",
            "horizons",
            "horizons_with_valid_citation",
            "horizons_citing_anything",
            "prompt_tokens",
            "output_tokens",
            "latency_ms",
            "requests",
            "retries",
            "failures",
            "anchors_completed",
        ):
            setattr(self, k, getattr(self, k) + getattr(o, k))
        for h in HORIZON_KEYS:
            for s in (-1, 0, 1):
                self.label_mix[h][s] += o.label_mix[h][s]
        self.errors.extend(o.errors[:5])
        self.failed_anchors.update(o.failed_anchors)


class ReaderIncomplete(RuntimeError):
    """Some anchors of a day got no answer from the backend; the day must not be written.

    Raised by the caller of :func:`read_day` after it flushed the prompt cache, so a re-run sends
    only the prompts that failed (the answered ones are cache hits)."""

    def __init__(self, day: str, stats: DayStats):
        self.day, self.stats = day, stats
        first_id, first_err = next(iter(stats.failed_anchors.items()))
        super().__init__(
            f"reader: {len(stats.failed_anchors)} of {stats.anchors} anchors failed on {day} "
            f"({stats.requests} requests, {stats.retries} retries); first: {first_id}: {first_err[:300]}. "
            f"The {stats.anchors_completed} answered anchors are cached: re-run the partition to send only the missing prompts."
        )

    def __reduce__(self):  # picklable despite the custom __init__
        return (type(self), (self.day, self.stats))


def evidence_items(ev: pl.DataFrame) -> dict[str, EvidenceItem]:
    return {
        r["passage_id"]: EvidenceItem(
            r["passage_id"], r["source_family"], r["title"], r["text"], r["public_time"].isoformat(), r.get("form_type"), r.get("item")
        )
        for r in ev.iter_rows(named=True)
    }


def _context_ids(contexts: pl.DataFrame) -> dict[str, list[str]]:
    """anchor_id -> the passage ids of its context, in prompt order."""
    ctx: dict[str, list[str]] = {}
    if contexts.height:
        c = contexts.sort(["anchor_id", "position"])
        for a, p in zip(c["anchor_id"].to_list(), c["passage_id"].to_list()):
            ctx.setdefault(a, []).append(p)
    return ctx


def _build_prompts(
    day: str,
    anchors: pl.DataFrame,
    ctx: dict[str, list[str]],
    texts: PromptTexts,
    backend: Backend,
    decoding: dict,
) -> list[tuple[dict, object, str, ReaderInput]]:
    """(anchor row, prompt, cache key, structured input) of each anchor, by anchor_id."""
    evidence, cards, companies, principles, stances = texts.evidence, texts.cards, texts.companies, texts.principles, texts.stances
    built = []
    key_dec = key_decoding(backend, decoding)
    for r in anchors.sort("anchor_id").iter_rows(named=True):
        items = [evidence[p] for p in ctx.get(r["anchor_id"], [])]
        card_text, risk = cards.get(r["ticker"], ("", ""))
        info = AnchorInfo(
            r["anchor_id"], r["ticker"], companies.get(r["ticker"], r["ticker"]), r["headline"], r["summary"], day, r["event_type"], r["session"]
        )
        principle = (principles or {}).get(r["anchor_id"])  # a str, or an experience Principle (text + Q_h/q0)
        p_text = getattr(principle, "text", principle)
        p_weights = tuple(getattr(principle, "weights", ()))
        p = build_prompt(info, items, card_text, p_text, stances)
        structured = ReaderInput(
            r["headline"], r["summary"], r["event_type"], tuple(zip(p.allowed_ids, items)), risk, day, p_weights, info.company, stances
        )
        key = p.key(backend.name, backend.model, key_dec)
        built.append((r, p, key, structured))
    return built


def _generate_missing(built: list, backend: Backend, cache: PromptCache, st: DayStats) -> tuple[dict[str, dict], dict[str, str]]:
    """(prompt key -> raw answer, prompt key -> redacted error): cached answers, and one backend call
    for the uncached prompts (each key once); new answers are cached, failures are not."""
    todo, raw = [], {}
    for r, p, key, structured in built:
        hit = cache.get(key)
        if hit is not None:
            raw[key] = hit
        elif key not in {k for _, k in todo}:
            todo.append((Request(p, structured), key))
    failed: dict[str, str] = {}  # prompt key -> redacted error
    if todo:
        before = tuple(getattr(backend, k, 0) for k in ("requests_sent", "retries"))
        gens = backend.generate([req for req, _ in todo])
        st.requests, st.retries = (getattr(backend, k, 0) - b for k, b in zip(("requests_sent", "retries"), before))
        for (req, key), g in zip(todo, gens):
            if g.error:
                failed[key] = redact_secrets(g.error)  # backends redact their key; this catches generic token shapes
                st.errors.append(failed[key])
                continue
            cache.put(key, backend.name, backend.model, g.text, g.prompt_tokens, g.output_tokens, g.latency_ms)
            raw[key] = {"raw": g.text, "prompt_tokens": g.prompt_tokens, "output_tokens": g.output_tokens, "latency_ms": g.latency_ms}
    return raw, failed


def _append_anchor_rows(
    cols: dict[str, list], r: dict, p, key: str, g: dict, *, evidence: dict[str, EvidenceItem], answered_by: tuple[str, str], st: DayStats
) -> None:
    """Parse one anchor's answer ``g`` and append its row per horizon to ``cols``, counting it in ``st``
    (``answered_by``: the backend's name and model)."""
    backend_name, model = answered_by
    parsed = parse_output(g["raw"], p.allowed_ids)
    st.valid_json += int(parsed.valid_json)
    st.prompt_tokens += g["prompt_tokens"]
    st.output_tokens += g["output_tokens"]
    st.latency_ms += g["latency_ms"]
    for h in HORIZON_KEYS:
        ho = parsed.horizons[h]
        passages = [p.id_to_passage[i] for i in ho.valid_ids]
        fams = [evidence[x].source_family for x in passages]
        st.horizons += 1
        st.horizons_with_valid_citation += int(bool(ho.valid_ids))
        st.horizons_citing_anything += int(bool(ho.cited_ids))
        st.label_mix[h][ho.signal] += 1
        row = {
            "anchor_id": r["anchor_id"],
            "ticker": r["ticker"],
            "event_type": r["event_type"],
            "horizon": h,
            "signal": ho.signal,
            "cited_ids": ho.cited_ids,
            "valid_ids": ho.valid_ids,
            "valid_passages": passages,
            "cited_families": fams,
            "reason": ho.reason,
            "valid_json": parsed.valid_json,
            "horizon_ok": ho.ok,
            "raw_json": g["raw"],
            "prompt_hash": key,
            "backend": backend_name,
            "model": model,
            "prompt_tokens": g["prompt_tokens"],
            "output_tokens": g["output_tokens"],
        }
        for name, v in row.items():
            cols[name].append(v)


@dataclass(frozen=True)
class PromptTexts:
    """What the prompts of a day are written from besides the anchors and their contexts: the
    passages by id, each ticker's context card (card_text, risk_state) and company name, each
    anchor's experience principle (toe variants), and whether they ask for each passage's stance."""

    evidence: dict[str, EvidenceItem]
    cards: dict[str, tuple[str, str]]
    companies: dict[str, str]
    principles: dict | None = None
    stances: bool = False


def read_day(
    day: str,
    anchors: pl.DataFrame,
    contexts: pl.DataFrame,
    texts: PromptTexts,
    backend: Backend,
    cache: PromptCache,
    decoding: dict,
) -> tuple[pl.DataFrame, DayStats]:
    """Reader outputs (one row per anchor and horizon) for the anchors of one decision day.

    ``contexts``: anchor_id, passage_id, position (1 = first in the prompt). ``texts``: the passages,
    cards and company names (:class:`PromptTexts`). Prompts whose key is cached are not sent to the backend.

    A failed generation is neither cached nor turned into a row: its anchor is left out of the
    frame and recorded in ``DayStats.failed_anchors`` (with the redacted error). The caller must not
    write such a day (see :class:`ReaderIncomplete`); it flushes ``cache`` so that a re-run sends
    only the failed prompts.

    ``texts.stances`` (``memory.credit = "passage_stance"``): the prompts also ask for each passage's own
    stance; the answers keep them in ``raw_json``, where the feedback reads them.
    """
    st = DayStats(anchors=anchors.height)
    built = _build_prompts(day, anchors, _context_ids(contexts), texts, backend, decoding)
    raw, failed = _generate_missing(built, backend, cache, st)
    st.cache_hits, st.cache_misses = cache.hits, cache.misses
    st.failures = len(failed)
    answered_by = (backend.name, backend.model)
    cols: dict[str, list] = {name: [] for name in READER_OUTPUTS.schema.names}  # built by column: one DataFrame at the end
    for r, p, key, _ in built:
        if key in failed:
            st.failed_anchors[r["anchor_id"]] = failed[key]
            continue
        st.anchors_completed += 1
        _append_anchor_rows(cols, r, p, key, raw[key], evidence=texts.evidence, answered_by=answered_by, st=st)
    return pl.DataFrame(cols, schema=_OUTPUT_SCHEMA), st


_OUTPUT_SCHEMA = pl.from_arrow(READER_OUTPUTS.schema.empty_table()).schema
