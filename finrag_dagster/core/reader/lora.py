"""The supervised LoRA reader (seed 000, the "LoRA + No Memory" / "LoRA + Source Memory" rows).

Adapters on the reader LLM's attention projections (q/k/v/o), rank 16, alpha 32, dropout 0.05,
learning rate 2e-4, effective batch 64 (gradient accumulation), checkpoint selection and early
stopping by validation macro-F1. The training examples use the frozen reader's prompt
(:func:`..prompt.build_prompt`, the same context format and static retrieval); the target is the
reader's JSON answer with the evidence ids and reasons left empty, and the loss is masked to the
three horizon ``signal`` values: ids and reasons are produced at inference, never supervised.

Point in time: :func:`select_training_labels` keeps only train-split labels that matured strictly
before the validation split starts (and validation labels that matured before the test split, for
checkpoint selection). Everything here but the trainer and the model loading is plain Python; the
trainer imports torch/transformers/peft lazily (``pip install 'finrag[lora]'``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..f1 import macro_f1
from ..settings import HORIZON_KEYS, LoraHyper
from ..storage.atomic import atomic_file
from .prompt import PROMPT_VERSION, Prompt

if TYPE_CHECKING:
    import polars as pl

ADAPTERS_DIR = "lora_adapters"  # <lake>/lora_adapters/<adapter_id>/
METADATA = "finrag_lora.json"
SIGNALS = (-1, 0, 1)


class LoraUnavailable(RuntimeError):
    """torch/transformers/peft (the ``lora`` extra) or the base weights are missing."""


# ------------------------------------------------------------------ point-in-time data selection (pure)
def select_training_labels(labels: pl.DataFrame, split: tuple[dt.date, dt.date], cutoff: dt.date) -> pl.DataFrame:
    """Labels a LoRA run may learn from: decision ``date`` inside ``split`` (inclusive), status
    ``ok`` and ``maturity_day`` strictly before ``cutoff`` (the next split's first day).

    For the train set ``cutoff`` is the validation split's start: a label maturing on or after it
    is dropped, even if its decision day lies in the train split. Rows: date, ticker, horizon, y.
    """
    import polars as pl  # here, not at import: the reader on a GPU machine needs torch, not polars

    a, b = split
    return (
        labels.filter(
            (pl.col("date") >= a) & (pl.col("date") <= b) & (pl.col("status") == "ok") & pl.col("y").is_not_null() & (pl.col("maturity_day") < cutoff)
        )
        .select("date", "ticker", "horizon", "maturity_day", pl.col("y").cast(pl.Int8))
        .sort("date", "ticker", "horizon")
    )


def anchor_targets(anchors: pl.DataFrame, labels: pl.DataFrame) -> dict[str, dict[str, int]]:
    """anchor_id -> {horizon: y} for the anchors whose three horizons all have a selected label
    (``labels`` from :func:`select_training_labels`); anchors missing a horizon are left out."""
    by = {}
    for d, t, h, y in labels.select("date", "ticker", "horizon", "y").iter_rows():
        by.setdefault((d, t), {})[h] = int(y)
    out = {}
    for aid, d, t in anchors.select("anchor_id", "date", "ticker").iter_rows():
        ys = by.get((d, t), {})
        if all(h in ys for h in HORIZON_KEYS):
            out[aid] = {h: ys[h] for h in HORIZON_KEYS}
    return out


# ------------------------------------------------------------------ targets and loss masks (pure)
def target_segments(event_type: str, targets: dict[str, int]) -> list[tuple[str, bool]]:
    """The supervised answer as (text, supervised) pieces: the reader's JSON with empty ids and
    reasons, where only the three signal values are supervised."""
    head = json.dumps({"event_type": event_type})[:-1] + ', "signals": {'
    segs: list[tuple[str, bool]] = [(head, False)]
    for i, h in enumerate(HORIZON_KEYS):
        segs.append((("" if i == 0 else ", ") + f'"{h}": {{"signal": ', False))
        segs.append((str(int(targets[h])), True))
        segs.append((', "ids": [], "reason": ""}', False))
    segs.append(('}, "main_uncertainty": ""}', False))
    return segs


def target_text(event_type: str, targets: dict[str, int]) -> str:
    return "".join(t for t, _ in target_segments(event_type, targets))


@dataclass
class Encoded:
    anchor_id: str
    input_ids: list[int]
    labels: list[int]  # -100 except on the signal value tokens
    signal_spans: list[tuple[int, int]]  # [start, end) of each horizon's value tokens, in HORIZON_KEYS order
    targets: dict[str, int]
    truncated: bool = False


def prompt_text(tokenizer, prompt: Prompt) -> str:
    """The chat-formatted prompt, ending with the assistant's turn (what the reader generates after)."""
    return tokenizer.apply_chat_template(prompt.messages, tokenize=False, add_generation_prompt=True)


def encode_example(tokenizer, anchor_id: str, prompt: Prompt, event_type: str, targets: dict[str, int], max_length: int) -> Encoded:
    """Token ids and loss labels of one example: chat prompt + target, with the loss on the signal
    tokens only. A prompt too long for ``max_length`` loses tokens from its left end."""
    pre = tokenizer(prompt_text(tokenizer, prompt), add_special_tokens=False)["input_ids"]
    ids: list[int] = []
    labels: list[int] = []
    spans = []
    for text, supervised in target_segments(event_type, targets):
        t = tokenizer(text, add_special_tokens=False)["input_ids"]
        if supervised:
            spans.append((len(ids), len(ids) + len(t)))
        ids += t
        labels += t if supervised else [-100] * len(t)
    eos = tokenizer.eos_token_id
    if eos is not None:
        ids.append(eos)
        labels.append(-100)
    room = max_length - len(ids)
    if room <= 0:
        raise ValueError(f"max_length {max_length} leaves no room for the prompt (the target alone is {len(ids)} tokens)")
    truncated = len(pre) > room
    pre = pre[-room:] if truncated else pre
    off = len(pre)
    return Encoded(anchor_id, pre + ids, [-100] * off + labels, [(a + off, b + off) for a, b in spans], dict(targets), truncated)


def macro_f1_by_horizon(y_true: dict[str, list[int]], y_pred: dict[str, list[int]]) -> dict[str, float]:
    """{horizon: macro-F1 over (-1, 0, 1)} and ``mean`` (the paper's overall macro-F1)."""
    out = {h: macro_f1(y_true[h], y_pred[h]) if y_true[h] else math.nan for h in HORIZON_KEYS}
    vals = [v for v in out.values() if not math.isnan(v)]
    out["mean"] = sum(vals) / len(vals) if vals else math.nan
    return out


def effective_schedule(n_examples: int, h: LoraHyper) -> tuple[int, int, int]:
    """(micro-batches per optimiser step, optimiser steps per epoch, examples per step): the
    effective batch is ``effective_batch`` examples (fewer when the train set is smaller)."""
    per_step = max(1, min(h.effective_batch, n_examples))
    accum = max(1, math.ceil(per_step / h.micro_batch))
    steps = max(1, math.ceil(n_examples / per_step))
    return accum, steps, per_step


# ------------------------------------------------------------------ adapter identity, save and load
def adapter_id(base_model: str, seed: int, window: dict, h: LoraHyper, n_train: int) -> str:
    """A stable name for an adapter: hash of base model, seed, data window and hyper-parameters."""
    blob = json.dumps(
        {"base": base_model, "seed": seed, "window": window, "hyper": h.model_dump(), "n_train": n_train, "prompt": PROMPT_VERSION},
        sort_keys=True,
        default=str,
    )
    return f"lora-s{seed}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


def adapters_root(lake_dir: str | Path) -> Path:
    return Path(lake_dir) / ADAPTERS_DIR


def write_metadata(path: Path, meta: dict) -> None:
    with atomic_file(path / METADATA, mode=0o644) as fh:
        fh.write(json.dumps(meta, indent=1, sort_keys=True, default=str).encode())


def read_metadata(path: str | Path) -> dict:
    p = Path(path) / METADATA
    if not p.exists():
        raise FileNotFoundError(f"{p} missing: {path} is not a finished finrag LoRA adapter")
    return json.loads(p.read_text())


def list_adapters(lake_dir: str | Path) -> list[dict]:
    """Metadata of every finished adapter in the lake (a folder without metadata is unfinished)."""
    root = adapters_root(lake_dir)
    out = []
    for p in sorted(root.glob("*/")) if root.exists() else []:
        if (p / METADATA).exists():
            out.append({**read_metadata(p), "path": str(p)})
    return out


# ------------------------------------------------------------------ model loading and the trainer (torch)
def _require():
    try:
        import peft  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as e:
        raise LoraUnavailable(f"the LoRA reader needs torch, transformers and peft: pip install 'finrag[lora]' ({e})") from None


def placement(cuda: bool | None = None) -> tuple[str, str]:
    """(device, dtype name) for the LoRA model: a CUDA GPU in bfloat16 when torch sees one (the
    full run: an 8B reader in float32 would not fit in memory nor train in time), else the CPU in
    float32 (the tests' small model)."""
    if cuda is None:
        import torch

        cuda = torch.cuda.is_available()
    return ("cuda", "bfloat16") if cuda else ("cpu", "float32")


def load_base(model: str, device: str | None = None, dummy_weights: bool = False):
    """(model, tokenizer) from a GGUF file or a HF folder/id, placed by :func:`placement` unless
    ``device`` is given (a GPU in bfloat16, the CPU in float32). A GGUF file is read through its
    dequantised float32 folder (:func:`~finrag_dagster.core.reader.model_path.gguf_folder`: converted
    once per file into the model cache, the folder the ``vllm`` reader loads too; the same weights and
    tokenizer as reading the GGUF, which costs ~18 s of dequantising for SmolLM2-135M on every load).
    ``dummy_weights``: the folder's config with random weights (seeded; for throughput only)."""
    _require()
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from .model_path import gguf_folder

    dev, dtype = placement() if device is None else placement(device.startswith("cuda"))
    p = Path(model)
    if dummy_weights:  # the config and tokenizer only: a GGUF's are read from the file, nothing converted
        kw = {"gguf_file": p.name} if p.suffix == ".gguf" else {}
        where = str(p.parent) if kw else model
        tok = AutoTokenizer.from_pretrained(where, **kw)
        torch.manual_seed(0)
        with torch.device(device or dev):
            m = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(where, **kw), dtype=getattr(torch, dtype))
    else:
        where = str(gguf_folder(p)) if p.suffix == ".gguf" else model
        tok = AutoTokenizer.from_pretrained(where)
        m = AutoModelForCausalLM.from_pretrained(where, dtype=getattr(torch, dtype)).to(device or dev)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return m, tok


def _device(model):
    """The device the model's weights are on (batches go there)."""
    return next(model.parameters()).device


def wrap_lora(model, h: LoraHyper, seed: int | None = None):
    """Wrap ``model`` with fresh LoRA adapters. ``seed`` fixes their random initialisation (peft draws
    lora_A from torch's global generator): without it the adapter depends on whatever drew random
    numbers earlier in the process, and one seed's training is not reproducible to the byte."""
    _require()
    import torch
    from peft import LoraConfig, get_peft_model

    cfg = LoraConfig(r=h.rank, lora_alpha=h.alpha, lora_dropout=h.dropout, target_modules=list(h.target_modules), bias="none", task_type="CAUSAL_LM")
    if seed is not None:
        torch.manual_seed(seed)
    return get_peft_model(model, cfg)


def _batch(examples: list[Encoded], pad_id: int):
    import torch

    n = max(len(e.input_ids) for e in examples)
    ids = torch.full((len(examples), n), pad_id, dtype=torch.long)
    lab = torch.full((len(examples), n), -100, dtype=torch.long)
    att = torch.zeros((len(examples), n), dtype=torch.long)
    for i, e in enumerate(examples):  # right padding
        k = len(e.input_ids)
        ids[i, :k] = torch.tensor(e.input_ids)
        lab[i, :k] = torch.tensor(e.labels)
        att[i, :k] = 1
    return ids, lab, att


def signal_token_ids(tokenizer) -> dict[int, list[int]]:
    return {y: tokenizer(str(y), add_special_tokens=False)["input_ids"] for y in SIGNALS}


def predict_signals(model, tokenizer, examples: list[Encoded]) -> list[dict[str, int]]:
    """Each horizon's signal as constrained decoding of the target template would pick it: the
    value among -1/0/1 with the highest log-likelihood, earlier horizons filled with the model's
    own choices (never the label). Used for validation macro-F1."""
    import torch

    cand = list(signal_token_ids(tokenizer).items())
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    out = []
    model.eval()
    with torch.no_grad():
        for e in examples:
            ids = list(e.input_ids)
            pred: dict[str, int] = {}
            shift = 0
            for h, (a, b) in zip(HORIZON_KEYS, e.signal_spans):
                a, b = a + shift, b + shift
                prefix, suffix = ids[:a], ids[b:]
                # the three candidates in one right-padded batch (causal: padding changes no scored position)
                n = max(len(t) for _, t in cand)
                x = torch.full((len(cand), len(prefix) + n), pad, dtype=torch.long)
                for i, (_, t) in enumerate(cand):
                    x[i, : len(prefix) + len(t)] = torch.tensor(prefix + t)
                logp = torch.log_softmax(model(input_ids=x.to(_device(model))).logits[:, len(prefix) - 1 : len(prefix) - 1 + n].float(), -1)
                scores = [float(sum(logp[i, j, t] for j, t in enumerate(toks))) for i, (_, toks) in enumerate(cand)]
                k = max(range(len(cand)), key=lambda i: scores[i])
                best, best_toks = cand[k]
                pred[h] = best
                ids = prefix + list(best_toks) + suffix
                shift += len(best_toks) - (b - a)
            out.append(pred)
    return out


def validation_scores(model, tokenizer, examples: list[Encoded]) -> dict[str, float]:
    preds = predict_signals(model, tokenizer, examples)
    yt = {h: [e.targets[h] for e in examples] for h in HORIZON_KEYS}
    yp = {h: [p[h] for p in preds] for h in HORIZON_KEYS}
    return macro_f1_by_horizon(yt, yp)


@dataclass
class TrainResult:
    state: dict  # the selected checkpoint's adapter weights (name -> tensor)
    steps: int
    best_epoch: int
    best_scores: dict
    history: list = field(default_factory=list)  # per epoch: steps, mean train loss, validation scores
    stopped: str = ""


def trainable_state(model) -> dict:
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def train_lora(
    model, tokenizer, train: list[Encoded], validation: list[Encoded], h: LoraHyper, seed: int, log: Callable[[str], None] = lambda m: None
) -> TrainResult:
    """Train the adapters of ``model`` (a peft model from :func:`wrap_lora`) and load the selected
    checkpoint back into it. Loss: mean cross-entropy over the signal tokens of each effective batch.
    After every epoch the validation macro-F1 (mean over horizons) is computed; the best epoch's
    adapter weights are kept, and training stops after ``patience`` epochs without improvement or
    at ``max_steps`` optimiser steps."""
    import torch

    if not train:
        raise ValueError("no training examples (no train-split label matured before the validation split starts)")
    random.seed(seed)
    torch.manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=h.learning_rate)
    accum, steps_per_epoch, per_step = effective_schedule(len(train), h)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    rng = random.Random(seed)
    best = TrainResult(trainable_state(model), 0, -1, {"mean": -math.inf})
    steps, bad, stopped = 0, 0, "epochs"
    for epoch in range(h.epochs):
        order = list(range(len(train)))
        rng.shuffle(order)
        model.train()
        losses = []
        t0 = time.perf_counter()
        for s0 in range(0, len(order), per_step):
            chunk = [train[i] for i in order[s0 : s0 + per_step]]
            n_tok = sum(sum(1 for v in e.labels if v != -100) for e in chunk)
            opt.zero_grad(set_to_none=True)
            total = 0.0
            for m0 in range(0, len(chunk), h.micro_batch):
                ids, lab, att = (t.to(_device(model)) for t in _batch(chunk[m0 : m0 + h.micro_batch], pad))
                logits = model(input_ids=ids, attention_mask=att).logits[:, :-1].float()
                tgt = lab[:, 1:]
                loss = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100, reduction="sum"
                ) / max(1, n_tok)
                loss.backward()
                total += float(loss.detach())
            opt.step()
            steps += 1
            losses.append(total)
            log(f"epoch {epoch} step {steps}: loss {total:.4f} ({time.perf_counter() - t0:.1f}s)")
            if h.max_steps and steps >= h.max_steps:
                break
        scores = validation_scores(model, tokenizer, validation) if validation else {"mean": math.nan}
        best_mean = best.best_scores.get("mean", -math.inf)
        rec = {"epoch": epoch, "steps": steps, "train_loss": sum(losses) / max(1, len(losses)), "validation": scores}
        best.history.append(rec)
        log(f"epoch {epoch}: validation macro-F1 {scores.get('mean')}")
        mean = scores.get("mean", math.nan)
        # no validation set: the last epoch is kept (no early stopping)
        improved = not validation or best.best_epoch < 0 or (not math.isnan(mean) and (math.isnan(best_mean) or mean > best_mean))
        if improved:
            best.state, best.best_epoch, best.best_scores, bad = trainable_state(model), epoch, scores, 0
        else:
            bad += 1
        if h.max_steps and steps >= h.max_steps:
            stopped = "max_steps"
            break
        if bad >= h.patience:
            stopped = "early_stopping"
            break
    with torch.no_grad():
        cur = dict(model.named_parameters())
        for n, t in best.state.items():
            cur[n].copy_(t)
    best.steps, best.stopped = steps, stopped
    return best


def save_adapter(model, out_dir: str | Path, meta: dict) -> Path:
    """Write the adapter (peft's safetensors + config) to ``out_dir``, then its metadata JSON
    last and atomically: a folder without ``finrag_lora.json`` is an unfinished write."""
    out = Path(out_dir)
    tmp = out.with_name(f".{out.name}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    model.save_pretrained(str(tmp))
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    write_metadata(out, meta)
    return out


def load_adapter(base_model, adapter_dir: str | Path):
    """``base_model`` with the adapter of ``adapter_dir`` attached (inference mode)."""
    _require()
    from peft import PeftModel

    read_metadata(adapter_dir)  # refuse an unfinished folder
    m = PeftModel.from_pretrained(base_model, str(adapter_dir), is_trainable=False)
    m.eval()
    return m
