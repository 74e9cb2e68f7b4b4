"""LoRA training runs from the lake: examples, one adapter per seed, adapters written to the lake.

Train set: train-split anchors whose three horizon labels matured strictly before the validation
split's first session; validation set (checkpoint selection, early stopping): validation-split
anchors whose labels matured before the test split's first session. Both are read with the frozen
reader's prompt and static retrieval (the top-M of each anchor's candidate pool by relevance, the
``no_memory`` context) and the same market-context cards.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from .loop_io import evidence_items
from .memory.source_memory import rerank
from .reader.lora import (
    LoraHyper,
    adapter_id,
    adapters_root,
    anchor_targets,
    encode_example,
    load_base,
    save_adapter,
    select_training_labels,
    train_lora,
    wrap_lora,
)
from .reader.prompt import PROMPT_VERSION, AnchorInfo, Prompt, build_prompt
from .settings import SPLIT_NAMES
from .splits import lora_first_day, split_bounds

if TYPE_CHECKING:
    from .calendar import TradingCalendar
    from .settings import Settings
    from .storage.lake import Lake


@dataclass
class RawExample:
    anchor_id: str
    day: str
    prompt: Prompt
    event_type: str
    targets: dict[str, int]


def lora_window(s: Settings, cal: TradingCalendar) -> dict:
    """Split bounds and label cut-offs of a LoRA run (sessions as ISO dates)."""
    b = dict(zip(SPLIT_NAMES, split_bounds(s, cal)))
    if "train" not in b or "validation" not in b:
        raise ValueError("LoRA training needs sessions in both the train and the validation split")
    test_start = lora_first_day(s, cal)
    return {
        "train": list(b["train"]),
        "train_labels_matured_before": b["validation"][0],
        "validation": list(b["validation"]),
        "validation_labels_matured_before": test_start,
    }


def split_examples(s: Settings, lake: Lake, split: tuple[str, str], cutoff: str, limit: int = 0) -> list[RawExample]:
    """The anchors of ``split`` (materialised days) whose labels matured before ``cutoff``, as prompts."""
    have = sorted(d for d in lake.materialized_dates("anchors") if split[0] <= d <= split[1])
    if not have:
        return []
    labels = lake.read("labels", dates=[d for d in have if lake.exists("labels", date=d)]) if lake.partition_files("labels") else None
    if labels is None or labels.height == 0:
        return []
    sel = select_training_labels(labels, (dt.date.fromisoformat(split[0]), dt.date.fromisoformat(split[1])), dt.date.fromisoformat(cutoff))
    anchors = lake.read("anchors", dates=have)
    targets = anchor_targets(anchors, sel)
    anchors = anchors.filter(pl.col("anchor_id").is_in(list(targets))).sort("date", "anchor_id")
    if limit:
        anchors = anchors.head(limit)
    if anchors.height == 0:
        return []
    days = sorted({d.isoformat() for d in anchors["date"].to_list()})
    cands = lake.read("candidates", dates=days).filter(pl.col("anchor_id").is_in(anchors["anchor_id"].to_list()))
    ctx = rerank(cands.drop("date"), {}, None, 0.0, s.retrieval.m)
    ev = evidence_items(lake, ctx["passage_id"].to_list())
    by_anchor = {a: g.sort("position")["passage_id"].to_list() for (a,), g in ctx.group_by(["anchor_id"])} if ctx.height else {}
    cards = lake.read("context_cards", dates=days)
    card = {(d.isoformat(), t): txt for d, t, txt in cards.select("date", "ticker", "card_text").iter_rows()}
    uni = lake.read("universe")
    companies = dict(zip(uni["ticker"], uni["company"]))
    out = []
    for r in anchors.iter_rows(named=True):
        day = r["date"].isoformat()
        info = AnchorInfo(
            r["anchor_id"], r["ticker"], companies.get(r["ticker"], r["ticker"]), r["headline"], r["summary"], day, r["event_type"], r["session"]
        )
        p = build_prompt(info, [ev[x] for x in by_anchor.get(r["anchor_id"], [])], card.get((day, r["ticker"]), ""))
        out.append(RawExample(r["anchor_id"], day, p, r["event_type"], targets[r["anchor_id"]]))
    return out


def base_model_of(s: Settings) -> str:
    if s.lora.base_model:
        return s.lora.base_model
    if s.reader.model and s.reader.backend in ("llama_cpp", "transformers", "vllm"):
        return s.reader.model
    from .reader.backends import default_gguf

    return default_gguf()


def train_adapters(s: Settings, lake: Lake, cal: TradingCalendar, seeds: list[int] | None = None, log: Callable[[str], None] = print) -> list[dict]:
    """Train one adapter per seed and write each to ``<lake>/lora_adapters/<adapter_id>/`` with its
    metadata (data window, seed, steps, validation scores). Returns the metadata written."""
    h = LoraHyper.from_settings(s)
    win = lora_window(s, cal)
    base = base_model_of(s)
    raw_train = split_examples(s, lake, tuple(win["train"]), win["train_labels_matured_before"], s.lora.max_train_examples)
    raw_val = split_examples(s, lake, tuple(win["validation"]), win["validation_labels_matured_before"], s.lora.max_validation_examples)
    if not raw_train:
        raise ValueError(
            f"no train-split anchor has labels matured before {win['train_labels_matured_before']}: materialise anchors, "
            "candidates, context_cards and labels over the train split first"
        )
    log(f"lora: {len(raw_train)} train / {len(raw_val)} validation anchors; base {base}")
    metas = []
    for seed in seeds if seeds is not None else list(s.lora.seeds):
        t0 = time.perf_counter()
        model, tok = load_base(base)
        enc = lambda xs: [encode_example(tok, x.anchor_id, x.prompt, x.event_type, x.targets, h.max_length) for x in xs]  # noqa: E731
        train, val = enc(raw_train), enc(raw_val)
        pm = wrap_lora(model, h, seed)
        res = train_lora(pm, tok, train, val, h, seed, log=lambda m, seed=seed: log(f"lora s{seed}: {m}"))
        aid = adapter_id(base, seed, win, h, len(train))
        meta = {
            "adapter_id": aid,
            "base_model": base,
            "seed": seed,
            "window": win,
            "hyper": h.model_dump(),
            "prompt_version": PROMPT_VERSION,
            "n_train": len(train),
            "n_validation": len(val),
            "truncated_examples": sum(e.truncated for e in train + val),
            "train_days": [raw_train[0].day, raw_train[-1].day],
            "steps": res.steps,
            "best_epoch": res.best_epoch,
            "stopped": res.stopped,
            "validation": res.best_scores,
            "history": res.history,
            "trainable_parameters": sum(p.numel() for p in pm.parameters() if p.requires_grad),
            "train_seconds": round(time.perf_counter() - t0, 1),
        }
        save_adapter(pm, adapters_root(s.lake_dir) / aid, meta)
        log(f"lora s{seed}: wrote {aid} (steps {res.steps}, validation macro-F1 {res.best_scores.get('mean')})")
        metas.append(meta)
    return metas


def find_adapter(s: Settings, lake_dir, cal: TradingCalendar, seed: int) -> dict:
    """The finished adapter of ``seed`` trained with these settings (base model, data window,
    hyper-parameters); MissingInput when there is none (train it first)."""
    from .errors import MissingInput
    from .reader.lora import list_adapters

    base, win, h = base_model_of(s), lora_window(s, cal), LoraHyper.from_settings(s).model_dump()
    hyper_keys = [k for k in h if k not in ("max_steps",)]  # a capped smoke run is still the same recipe
    found = [
        m
        for m in list_adapters(lake_dir)
        if m.get("seed") == seed
        and m.get("base_model") == base
        and m.get("window") == win
        and all(m.get("hyper", {}).get(k) == (list(v) if isinstance(v, tuple) else v) for k, v in h.items() if k in hyper_keys)
    ]
    if not found:
        raise MissingInput(
            f"no LoRA adapter for seed {seed} (base {base}, train window {win['train']}) in {lake_dir}/lora_adapters; "
            "run `finrag lora train` (or materialise the lora_adapters asset) first"
        )
    return sorted(found, key=lambda m: m["adapter_id"])[-1]


def lora_backends(s: Settings, lake_dir, cal: TradingCalendar, base_cfg):
    """``Variant -> Backend`` for the LoRA families: base model + the seed's adapter, through vLLM
    (``enable_lora`` + ``LoRARequest``) when the reader backend is ``vllm``, else transformers+peft
    on CPU. Backends are built once per seed."""
    import copy
    from dataclasses import replace

    from .reader.backends import make_backend, vllm_lora_request_kwargs

    made: dict[int, object] = {}

    def backend_for(v):
        if v.lora_seed not in made:
            meta = find_adapter(s, lake_dir, cal, v.lora_seed)
            kind = "vllm" if base_cfg.backend == "vllm" else "transformers"
            model = base_cfg.model if kind == "vllm" else meta["base_model"]
            cfg = replace(base_cfg, backend=kind, model=model, lora_adapter=meta["path"], max_lora_rank=s.lora.rank)
            if kind == "vllm" and made:  # one engine (enable_lora) for every seed: only the LoRARequest differs
                b = copy.copy(next(iter(made.values())))
                b.cfg, b._lora = cfg, vllm_lora_request_kwargs(cfg)
                made[v.lora_seed] = b
            else:
                made[v.lora_seed] = make_backend(cfg)
        return made[v.lora_seed]

    return backend_for
