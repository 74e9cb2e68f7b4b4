"""vLLM request building (runs only where vllm imports, i.e. in the GPU environment)."""

import importlib.util

import pytest

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM lives in the GPU environment (docs/gpu.md)")]


def test_sampling_params_are_greedy_and_carry_each_prompts_schema():
    from finrag_dagster.core.reader.backends import BackendConfig, Request, build_vllm_sampling_params
    from finrag_dagster.core.reader.prompt import AnchorInfo, EvidenceItem, build_prompt

    a = AnchorInfo("a", "AAPL", "Apple Inc.", "Apple beats", "", "2020-05-01", "Earnings & Guidance", "regular")
    p1 = build_prompt(a, [EvidenceItem("p", "news", "t", "x", "2020-05-01T00:00:00+00:00")], "card")
    p2 = build_prompt(a, [], "card")
    sp = build_vllm_sampling_params([Request(p1), Request(p2)], BackendConfig(max_tokens=123))
    assert [s.temperature for s in sp] == [0.0, 0.0] and sp[0].max_tokens == 123
    assert sp[0].structured_outputs.json == p1.schema and sp[1].structured_outputs.json == p2.schema


def test_lora_request_is_built_from_the_adapters_metadata(tmp_path):
    from vllm.lora.request import LoRARequest

    from finrag_dagster.core.reader.backends import BackendConfig, vllm_lora_engine_kwargs, vllm_lora_request_kwargs
    from finrag_dagster.core.reader.lora import write_metadata

    d = tmp_path / "lora-s3-abc"
    d.mkdir()
    write_metadata(d, {"adapter_id": "lora-s3-abc"})
    cfg = BackendConfig(backend="vllm", model="HuggingFaceTB/SmolLM2-135M-Instruct", lora_adapter=str(d))
    req = LoRARequest(**vllm_lora_request_kwargs(cfg))
    assert req.lora_name == "lora-s3-abc" and req.lora_path == str(d.resolve()) and req.lora_int_id > 0
    assert vllm_lora_engine_kwargs(cfg)["enable_lora"] is True
