"""The LLM paths of the Tree-of-Experience, through any reader backend (core/reader/backends/).

The LLM-rewrite utility update (seed 002 eq. 14, :func:`llm_update`), the judge and expander
(eqs 10-12, :func:`llm_judge`) and the LLM rewrite for induction (eq. 3, :func:`llm_rewriter`). An
invalid answer is never silently guessed: the update leaves Q unchanged and is quarantined
(:func:`quarantine_rows`), the judge falls back to the rule judge, the rewrite to the rule skeleton.
With the embedded reader these functions raise :class:`LLMBackendRequired`. Prompts, answers and
fallbacks: docs/experience.md, "The tree" and "`core/experience/llm.py`: design notes".
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

import polars as pl

from ..reader.backends import Backend, BackendUnavailable, Request, key_decoding, prompt_key
from ..reader.prompt import Prompt
from .tree import ExperienceTree, Leaf

LLM_BACKENDS = ("llama_cpp", "openai", "vllm")
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.I)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


class LLMBackendRequired(BackendUnavailable):
    """An LLM-only path of the tree was asked of a backend that is not an LLM."""


def require_llm(backend: Backend | None, what: str) -> None:
    name = getattr(backend, "name", None)
    if backend is None or name == "embedded":
        raise LLMBackendRequired(
            f"{what} needs an LLM reader backend (reader.backend = {' | '.join(LLM_BACKENDS)}, see docs/reader.md); "
            f"the {name or 'missing'} backend is a rules-only reader that cannot answer this prompt. "
            "With the embedded reader use the formula update (seed 002 eq. 13) and the rule induction."
        )


# ------------------------------------------------------------------ eq. 14
UPDATE_SYSTEM = (
    "You maintain the utility of analytical principles in an experience memory for financial news analysis. "
    "A utility is a number between 0 and {hi:g}: {q0:g} is neutral, higher means the principle has helped "
    "predictions at that horizon, lower means it has misled them. You receive one matured outcome and return "
    'the revised utility for that horizon only, as JSON {{"q": <number>}}.'
)


def update_schema() -> dict:
    # no minimum/maximum: not every structured-output server accepts them; the answer is clipped instead
    return {"type": "object", "additionalProperties": False, "required": ["q"], "properties": {"q": {"type": "number"}}}


def llm_update_prompt(leaf: Leaf, horizon: str, score: float, alpha: float, q0: float = 1.0) -> Prompt:
    """The eq. 14 prompt for one path and one matured horizon."""
    r = _sign(score) * alpha
    qs = ", ".join(f"{h}: {v:.4f}" for h, v in leaf.q.items())
    user = (
        f"Factor: {leaf.factor}\n"
        f"Analytical principle: {leaf.principle}\n"
        f"Current utilities by horizon: {qs}\n"
        f"Times recalled: {leaf.n_recall}; times updated from feedback: {leaf.n_hit}\n"
        f"Matured horizon: {horizon}\n"
        f"Prediction made with this principle (score in [-1, 1]): {score:+.4f}\n"
        f"Realised excess return over the benchmark at {horizon}: {alpha:+.6f}\n"
        f"Reward r = sign(score) * excess return: {r:+.6f}\n"
        f"Return the new utility for {horizon}, between 0 and {2 * q0:g}."
    )
    return Prompt(UPDATE_SYSTEM.format(hi=2 * q0, q0=q0), user, [], {}, update_schema())


def parse_utility(text: str) -> tuple[float | None, str]:
    """(value, "") from ``{"q": x}`` or a bare number; (None, reason) otherwise. Never raises."""
    raw = _FENCE.sub("", text or "").strip()
    if not raw:
        return None, "empty answer"
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, ValueError):
        obj = None
    if isinstance(obj, dict):
        v = obj.get("q")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            if isinstance(v, str) and _NUMBER.fullmatch(v.strip()):
                v = float(v)
            else:
                return None, f"no numeric 'q' in the JSON answer: {raw[:120]!r}"
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        v = obj
    else:
        nums = _NUMBER.findall(raw)
        if len(nums) != 1:
            return None, f"expected one number, found {len(nums)}: {raw[:120]!r}"
        v = float(nums[0])
    v = float(v)
    if not math.isfinite(v):
        return None, f"non-finite utility {v!r}"
    return v, ""


@dataclass
class LLMUpdate:
    leaf_id: str
    horizon: str
    q_old: float
    q_new: float  # = q_old when not ok
    ok: bool
    raw: str
    error: str = ""
    clipped: bool = False
    prompt_hash: str = ""


def llm_updates(backend: Backend, items: list[tuple[Leaf, str, float, float]], q0: float = 1.0) -> list[LLMUpdate]:
    """eq. 14 for a batch of (leaf, horizon, score, alpha); one backend call. Does not change the leaves."""
    require_llm(backend, "the LLM-rewrite utility update (seed 002 eq. 14)")
    prompts = [llm_update_prompt(leaf, h, score, alpha, q0) for leaf, h, score, alpha in items]
    gens = backend.generate([Request(p) for p in prompts]) if prompts else []
    out = []
    for (leaf, h, _, _), p, g in zip(items, prompts, gens):
        q_old = float(leaf.q[h])
        cfg = getattr(backend, "cfg", None)
        key = prompt_key(p, backend, cfg.decoding() if cfg is not None else {})
        if g.error:
            out.append(LLMUpdate(leaf.leaf_id, h, q_old, q_old, False, g.text, f"backend error: {g.error}", False, key))
            continue
        v, err = parse_utility(g.text)
        if v is None:
            out.append(LLMUpdate(leaf.leaf_id, h, q_old, q_old, False, g.text, f"unparsable utility: {err}", False, key))
            continue
        c = min(max(v, 0.0), 2.0 * q0)
        out.append(LLMUpdate(leaf.leaf_id, h, q_old, c, True, g.text, "", c != v, key))
    return out


def apply_llm_update(tree: ExperienceTree, u: LLMUpdate) -> bool:
    """Write an ok update into the tree (Q_h replaced, n_hit + 1); a failed one changes nothing."""
    if not u.ok:
        return False
    leaf = next(x for x in tree.leaves() if x.leaf_id == u.leaf_id)
    leaf.q[u.horizon] = u.q_new
    leaf.n_hit += 1
    return True


def llm_update(tree: ExperienceTree, backend: Backend, leaf_id: str, horizon: str, score: float, alpha: float) -> LLMUpdate:
    """eq. 14 on one path of ``tree`` (the LLM counterpart of :meth:`ExperienceTree.update`)."""
    leaf = next(x for x in tree.leaves() if x.leaf_id == leaf_id)
    u = llm_updates(backend, [(leaf, horizon, score, alpha)], tree.params.q0)[0]
    apply_llm_update(tree, u)
    return u


def quarantine_rows(updates: list[LLMUpdate], source_file: str = "experience_tree/llm_update") -> pl.DataFrame:
    """Failed updates as ``quarantine`` rows (write under source_table=experience_tree)."""
    bad = [u for u in updates if not u.ok]
    return pl.DataFrame(
        {
            "source_file": [source_file] * len(bad),
            "source_row": [i for i, u in enumerate(updates) if not u.ok],
            "reason": [u.error for u in bad],
            "raw": [
                json.dumps(
                    {"leaf_id": u.leaf_id, "horizon": u.horizon, "q_old": u.q_old, "prompt_hash": u.prompt_hash, "answer": u.raw}, sort_keys=True
                )
                for u in bad
            ],
            "rows": [1] * len(bad),
        },
        schema={"source_file": pl.Utf8, "source_row": pl.Int64, "reason": pl.Utf8, "raw": pl.Utf8, "rows": pl.Int64},
    )


# ------------------------------------------------------------------ eq. 3 (LLM variant)
REWRITE_SYSTEM = (
    "You turn a financial news item into one reusable analytical principle: a single short sentence, "
    "without company names or numbers, naming the kind of event and the channel through which it moves "
    'the stock. Answer as JSON {"principle": "<sentence>"}.'
)
MAX_PRINCIPLE = 160


def rewrite_schema() -> dict:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["principle"],
        "properties": {"principle": {"type": "string", "maxLength": MAX_PRINCIPLE}},
    }


def rewrite_prompt(headline: str, summary: str) -> Prompt:
    return Prompt(REWRITE_SYSTEM, f"Headline: {headline}\nSummary: {(summary or '')[:600]}", [], {}, rewrite_schema())


def parse_principle(text: str) -> str | None:
    raw = _FENCE.sub("", text or "").strip()
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, ValueError):
        return None
    v = obj.get("principle") if isinstance(obj, dict) else None
    if not isinstance(v, str) or not v.strip():
        return None
    return " ".join(v.split())[:MAX_PRINCIPLE]


def llm_rewriter(backend: Backend):
    """The ``rewrite`` argument of :func:`.induction.induce_tree` for an LLM backend."""
    require_llm(backend, "the LLM rewrite of the tree induction (seed 002 eq. 3)")

    def rewrite(items: list[tuple[str, str]]) -> list[str | None]:
        if not items:
            return []
        gens = backend.generate([Request(rewrite_prompt(h, s)) for h, s in items])
        return [None if g.error else parse_principle(g.text) for g in gens]

    return rewrite


# ------------------------------------------------------------------ judge and expander (eqs 10-12)
JUDGE_SYSTEM = (
    "You manage an experience memory of analytical principles for financial news analysis. For a news item "
    "you receive the candidate principles that matched it (with ids and scores). Decide whether one of them "
    "applies (reuse it) or whether a new principle is needed (expand). When expanding, write the new principle "
    "as one company-agnostic sentence (no company names, no numbers). Answer JSON "
    '{"decision": "reuse" | "expand", "leaf_id": "<a candidate id when reusing, else empty>", '
    '"principle": "<the new principle when expanding, else empty>"}.'
)


def judge_schema(ids: list[str]) -> dict:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["decision", "leaf_id", "principle"],
        "properties": {
            "decision": {"type": "string", "enum": ["reuse", "expand"] if ids else ["expand"]},
            "leaf_id": {"type": "string", "enum": [*ids, ""]},
            "principle": {"type": "string", "maxLength": MAX_PRINCIPLE},
        },
    }


def judge_prompt(state: str, factor: str, candidates: list[tuple[str, str, float]]) -> Prompt:
    """The judge (reuse vs expand) and expander prompt for one state: candidates are (leaf id,
    principle, S) of the leaves that cleared the threshold under the kept factors."""
    lines = [f"- {i}: {p} (score {s:.3f})" for i, p, s in candidates] or ["(none: no principle is similar enough; expand)"]
    user = f"News item (company masked): {state[:600]}\nBest matching factor: {factor}\nCandidate principles:\n" + "\n".join(lines)
    return Prompt(JUDGE_SYSTEM, user, [], {}, judge_schema([i for i, _, _ in candidates]))


@dataclass
class Judgement:
    decision: str  # reuse | expand
    leaf_id: str  # the reused leaf ("" when expanding)
    principle: str  # the new principle ("" when reusing)
    ok: bool
    raw: str
    error: str = ""


def parse_judgement(text: str, ids: list[str]) -> Judgement:
    """The judge's answer; ``ok=False`` with the reason when it is not a valid decision. Never raises."""
    raw = _FENCE.sub("", text or "").strip()
    try:
        obj = json.loads(raw)
    except (json.JSONDecodeError, ValueError):
        return Judgement("", "", "", False, text or "", f"not JSON: {raw[:120]!r}")
    if not isinstance(obj, dict) or obj.get("decision") not in ("reuse", "expand"):
        return Judgement("", "", "", False, text or "", f"no decision reuse|expand: {raw[:120]!r}")
    if obj["decision"] == "reuse":
        lid = obj.get("leaf_id")
        if lid not in ids:
            return Judgement("", "", "", False, text or "", f"reuse of {lid!r}, not a candidate ({', '.join(ids) or 'none'})")
        return Judgement("reuse", lid, "", True, text or "")
    pr = obj.get("principle")
    if not isinstance(pr, str) or not pr.strip():
        return Judgement("", "", "", False, text or "", "expand without a principle")
    return Judgement("expand", "", " ".join(pr.split())[:MAX_PRINCIPLE], True, text or "")


def llm_judge(backend: Backend, cache=None, decoding: dict | None = None):
    """A batch judge/expander over a backend: items (state, factor, candidates) -> Judgements.
    Answers go through ``cache`` (a :class:`..reader.cache.PromptCache`) when given."""
    require_llm(backend, "the LLM judge and expander of the experience tree (seed 002 eqs 10-12)")
    dec = decoding if decoding is not None else (backend.cfg.decoding() if getattr(backend, "cfg", None) else {})

    def judge(items: list[tuple[str, str, list[tuple[str, str, float]]]], day_cache=None) -> list[Judgement]:
        c = day_cache if day_cache is not None else cache
        prompts = [judge_prompt(st, fac, cands) for st, fac, cands in items]
        kd = key_decoding(backend, dec)
        keys = [p.key(backend.name, backend.model, kd) for p in prompts]
        texts: dict[str, str | None] = {}
        todo = []
        for p, k in zip(prompts, keys):
            hit = c.get(k) if c is not None else None
            if hit is not None:
                texts[k] = hit["raw"]
            elif k not in texts:
                texts[k] = None
                todo.append((p, k))
        errors = {}
        if todo:
            gens = backend.generate([Request(p) for p, _ in todo])
            for (p, k), g in zip(todo, gens):
                if g.error:
                    errors[k] = g.error
                    continue
                texts[k] = g.text
                if c is not None:
                    c.put(k, backend.name, backend.model, g.text, g.prompt_tokens, g.output_tokens, g.latency_ms)
        out = []
        for (st, fac, cands), k in zip(items, keys):
            if k in errors:
                out.append(Judgement("", "", "", False, "", f"backend error: {errors[k]}"))
            else:
                out.append(parse_judgement(texts[k] or "", [i for i, _, _ in cands]))
        return out

    return judge


def _sign(x: float) -> float:
    return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)
