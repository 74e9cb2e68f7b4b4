"""The ``transformers`` backend: a base model and an optional peft LoRA adapter (:mod:`..lora`), greedy,
on the CPU or a CUDA GPU, without a grammar: answers go through :mod:`..parse`."""

from __future__ import annotations

import time
from pathlib import Path

from .base import Backend, BackendConfig, BackendUnavailable, Generation, Request, adapter_identity, default_gguf, dist_version, with_adapter


class TransformersBackend(Backend):
    """Base model + optional LoRA adapter through transformers/peft, greedy, on CPU or a CUDA GPU
    (bfloat16 there, :func:`.lora.placement`); ``batch_size`` prompts per ``generate`` call, left-padded.

    No constrained decoding: the robust parser reads the answer (invalid JSON or a missing horizon
    becomes a 0 without citation, ids not retrieved are dropped)."""

    name = "transformers"

    def __init__(self, cfg: BackendConfig):
        super().__init__(cfg)
        from ..lora import LoraUnavailable, load_adapter, load_base

        self._base = cfg.model or default_gguf()
        if self._base.endswith(".gguf") and not Path(self._base).exists():
            raise BackendUnavailable(f"GGUF model file {self._base} not found")
        if cfg.batch_size < 1:
            raise BackendUnavailable(f"reader.batch_size must be at least 1, got {cfg.batch_size}")
        self._adapter = adapter_identity(cfg.lora_adapter) if cfg.lora_adapter else ""
        try:
            m, self._tok = load_base(self._base, dummy_weights=cfg.dummy_weights)
            self._m = load_adapter(m, cfg.lora_adapter) if cfg.lora_adapter else m.eval()
        except LoraUnavailable as e:
            raise BackendUnavailable(str(e)) from None

    @property
    def model(self) -> str:
        return with_adapter(Path(self._base).name, self._adapter)

    def engine_key(self) -> dict:
        """The base model's content (its config alone with dummy weights) and the adapter's weights
        (its id is in the model's name); the versions of transformers, peft and torch; on a GPU, its model and the
        weights' dtype (bfloat16 there, float32 on the CPU, where torch's thread count left 12 of 12
        answers unchanged, docs/reader.md)."""
        import torch

        from ..model_path import WEIGHT_SUFFIXES, weights_fingerprint

        libs = {d: dist_version(d) for d in ("transformers", "peft", "torch")}
        key = {"weights": weights_fingerprint(self._base), **({"dummy_weights": True} if self.cfg.dummy_weights else {}), **libs}
        if self.cfg.lora_adapter:  # its id names how it was trained; its weights are what answers
            key["adapter_weights"] = weights_fingerprint(self.cfg.lora_adapter, suffixes=WEIGHT_SUFFIXES)
        p = next(self._m.parameters())
        if p.device.type == "cpu":
            return key
        return {**key, "gpu": torch.cuda.get_device_name(p.device), "dtype": str(p.dtype).removeprefix("torch.")}

    def generate(self, requests: list[Request]) -> list[Generation]:
        out: list[Generation] = []
        b = self.cfg.batch_size
        for i in range(0, len(requests), b):
            out += self._generate_batch(requests[i : i + b])
        return out

    def _generate_batch(self, requests: list[Request]) -> list[Generation]:
        import torch

        t0 = time.perf_counter()
        self.requests_sent += len(requests)
        texts = [self._tok.apply_chat_template(r.prompt.messages, tokenize=False, add_generation_prompt=True) for r in requests]
        self._tok.padding_side = "left"  # a batch's rows end where generation starts
        enc = self._tok(texts, return_tensors="pt", add_special_tokens=False, padding=len(texts) > 1).to(next(self._m.parameters()).device)
        with torch.no_grad():
            gen = self._m.generate(
                **enc,
                max_new_tokens=self.cfg.max_tokens,
                do_sample=False,
                pad_token_id=self._tok.pad_token_id,
                eos_token_id=self._tok.eos_token_id,
            )
        width = enc["input_ids"].shape[1]
        per = (time.perf_counter() - t0) * 1000 / len(requests)
        out = []
        for row, mask in zip(gen, enc["attention_mask"]):
            new = row[width:]
            eos = (new == self._tok.eos_token_id).nonzero()
            n_out = int(eos[0, 0]) + 1 if len(eos) else int(new.shape[0])  # up to and with the first end token
            out.append(Generation(self._tok.decode(new[:n_out], skip_special_tokens=True), int(mask.sum()), n_out, per))
        return out
