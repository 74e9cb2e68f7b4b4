"""A LoRA adapter, trained by finrag's trainer (core/reader/lora.py, what `finrag lora train` runs:
two optimiser steps over SmolLM2-135M, rank 16 on q/k/v/o), served by vLLM on CPU with
``enable_lora`` + ``LoRARequest`` and compared with the transformers+peft reader on the same prompts.

Both sides run SmolLM2-135M in float32 from the same dequantised GGUF weights. The transformers
backend decodes without a grammar and vLLM with the schema, so their whole answers cannot be
compared; the adapter's effect can: greedy decoding *without* a grammar on both sides (vLLM's
``LLM.chat`` with the adapter's LoRARequest and no structured output) must give the same tokens,
and differ from the base model's."""

from __future__ import annotations

import json

import pytest

from finrag_dagster.core.reader.backends import BackendConfig, Request, default_gguf, make_backend

from .conftest import KV_CACHE_GIB, MAX_MODEL_LEN

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
N_TOKENS = 32


@pytest.fixture(scope="module")
def prompts(vllm_world):
    from finrag_dagster.core.lake_prompts import lake_prompts

    return lake_prompts(vllm_world[2], 2)


@pytest.fixture(scope="module")
def adapter(prompts, tmp_path_factory):
    from finrag_dagster.core.reader.lora import LoraHyper, encode_example, load_base, save_adapter, train_lora, wrap_lora

    model, tok = load_base(default_gguf(), device="cpu")  # float32
    h = LoraHyper(effective_batch=2, micro_batch=2, epochs=2, max_steps=2, max_length=320, learning_rate=5e-3)
    ys = [{"1D": 1, "3D": 1, "5D": 1}, {"1D": -1, "3D": -1, "5D": -1}]
    ex = [encode_example(tok, f"a{i}", p, "Earnings & Guidance", y, h.max_length) for i, (p, y) in enumerate(zip(prompts, ys))]
    pm = wrap_lora(model, h, seed=0)
    res = train_lora(pm, tok, ex, [], h, seed=0)  # no validation set: the last step's adapter is kept
    assert res.steps == 2
    out = tmp_path_factory.mktemp("adapters") / "lora-s0-vllmtest"
    return save_adapter(pm, out, {"adapter_id": "lora-s0-vllmtest", "seed": 0, "steps": res.steps})


def _vllm_plain(be, prompts, lora: bool) -> list[str]:
    """Greedy, no grammar, N_TOKENS tokens, through the backend's engine (with its adapter or not)."""
    from vllm import SamplingParams
    from vllm.lora.request import LoRARequest

    sp = SamplingParams(temperature=0.0, max_tokens=N_TOKENS, seed=0)
    kw = {"lora_request": LoRARequest(**be._lora)} if lora else {}
    return [o.outputs[0].text for o in be.llm.chat([p.messages for p in prompts], sampling_params=sp, use_tqdm=False, **kw)]


def test_vllm_serves_the_adapter_as_transformers_peft_reads_it(adapter, prompts):
    cfg = dict(model="", dtype="float32", max_model_len=MAX_MODEL_LEN, kv_cache_gib=KV_CACHE_GIB, max_tokens=400)
    vl = make_backend(BackendConfig(backend="vllm", lora_adapter=str(adapter), **cfg))
    assert vl.engine_kwargs["enable_lora"] and vl.model == "SmolLM2-135M-Instruct.Q4_1.gguf+lora:lora-s0-vllmtest"
    with_lora, base = _vllm_plain(vl, prompts, True), _vllm_plain(vl, prompts, False)
    # the reader's own path (schema + LoRARequest), one prompt, 48 tokens: the adapter's answers are
    # not the point (two steps at a high rate make it repeat IDs), the request path is
    (g,) = make_backend(BackendConfig(backend="vllm", lora_adapter=str(adapter), **{**cfg, "max_tokens": 48})).generate([Request(prompts[0])])
    assert not g.error and g.output_tokens > 0 and g.text.startswith("{")
    tf = make_backend(BackendConfig(backend="transformers", model=default_gguf(), lora_adapter=str(adapter), max_tokens=N_TOKENS))
    assert tf.model == vl.model  # the same cache identity: base file name + adapter id
    peft = [g.text for g in tf.generate([Request(p) for p in prompts])]
    same = sum(a == b for a, b in zip(with_lora, peft))
    print(f"\nvLLM+LoRA vs transformers+peft, greedy {N_TOKENS} tokens without grammar: {same}/{len(prompts)} identical")
    for a, b in zip(with_lora, peft):
        print("  vllm:", json.dumps(a[:160]), "\n  peft:", json.dumps(b[:160]))
    assert with_lora != base  # the adapter changes the answers (else the comparison shows nothing)
    assert same == len(prompts)
