"""Where the heavy stages run: inside the asset's own process (``local``) or as Ray tasks (``ray``).

The Dagster assets stay the orchestrator either way: an asset that embeds passages or reads
prompts enters :func:`use_engine` with the settings' ``[execution]`` section, and the core
functions it calls (:func:`finrag_dagster.core.embeddings.embed`, the reader backend made by
:func:`distributed_backend`) hand their work to the engine in force. Ray is reached through its
own client API (``ray.init(address=...)``): a local Ray started in this process when no address
is given, else an existing cluster (``"head:6379"``, or ``"auto"`` on a node of the cluster).

Work is cut into contiguous shards and gathered back in input order, and each shard is computed
by the same function as the local path, so the results (and the lake) are the same bytes for
either engine and any number of Ray workers: the embedding batches keep their texts and their
one intra-op thread (see core/embeddings.py), and each reader replica answers its prompts
greedily with the same backend.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


class EngineUnavailable(RuntimeError):
    """The configured engine cannot run here (Ray missing, cluster unreachable, no GPUs)."""


@dataclass(frozen=True)
class EngineSpec:
    """The ``[execution]`` settings an engine is built from."""

    engine: str = "local"
    address: str = ""  # empty: a local Ray started in-process
    num_cpus: int = 0  # a local Ray's CPUs (0: all of this machine's)
    reader_replicas: int = 0  # reader actors (0: one per CPU for CPU backends, one per GPU for vllm)
    gpus_per_replica: float = 1.0  # vllm replicas: GPUs each (tensor_parallel_size of them is typical)

    @classmethod
    def from_settings(cls, s) -> "EngineSpec":
        e = s.execution
        return cls(e.engine, e.address, e.num_cpus, e.reader_replicas, e.gpus_per_replica)


class LocalEngine:
    """Everything in this process (the default)."""

    name = "local"
    parallelism = 1

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        return [fn(x) for x in items]


def _ray():
    try:
        import ray
    except ImportError as e:
        raise EngineUnavailable("execution.engine = 'ray' needs Ray: pip install 'finrag[ray]'") from e
    return ray


class RayEngine:
    """Shards as Ray tasks on a local or remote Ray cluster (connects on first use)."""

    name = "ray"

    def __init__(self, spec: EngineSpec):
        self.spec = spec
        self._remote: dict[Callable, Any] = {}
        self._closers: list[Callable[[], Any]] = []
        self.started_here = False

    def connect(self):
        ray = _ray()
        if not ray.is_initialized():
            kw: dict[str, Any] = dict(include_dashboard=False, logging_level="WARNING", log_to_driver=False, configure_logging=False)
            # the workers must find the same package and settings: pass this process's environment on
            env = {k: v for k, v in os.environ.items() if k.startswith(("FINRAG_", "HF_", "TRANSFORMERS_", "TOKENIZERS_"))}
            kw["runtime_env"] = {"env_vars": env} if env else None
            if self.spec.address:
                kw["address"] = self.spec.address
            else:  # "local": a Ray of its own, never a running one that ray.init() would join (address "auto" does)
                kw["address"] = "local"
                kw["num_cpus"] = self.spec.num_cpus or (os.cpu_count() or 1)
            try:
                ray.init(**kw)
            except ConnectionError as e:
                raise EngineUnavailable(f"cannot reach the Ray cluster at {self.spec.address!r}: {e}") from e
            self.started_here = True
        return ray

    @property
    def parallelism(self) -> int:
        ray = self.connect()
        return max(1, int(ray.cluster_resources().get("CPU", 1)))

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        ray = self.connect()
        if fn not in self._remote:
            self._remote[fn] = ray.remote(num_cpus=1)(fn)
        return ray.get([self._remote[fn].remote(x) for x in items])

    def on_close(self, fn: Callable[[], Any]) -> None:
        """Call ``fn`` when the engine closes (e.g. to stop the actors it placed on a shared cluster)."""
        self._closers.append(fn)

    def close(self) -> None:
        while self._closers:
            self._closers.pop()()
        if self.started_here:
            _ray().shutdown()
            self.started_here = False


_current: ContextVar[LocalEngine | RayEngine | None] = ContextVar("finrag_engine", default=None)


def current_engine() -> LocalEngine | RayEngine:
    return _current.get() or LocalEngine()


def make_engine(spec: EngineSpec) -> LocalEngine | RayEngine:
    if spec.engine == "local":
        return LocalEngine()
    if spec.engine == "ray":
        _ray()  # fail early and clearly when Ray is not installed
        return RayEngine(spec)
    raise EngineUnavailable(f"unknown execution.engine {spec.engine!r}; choose 'local' or 'ray'")


@contextmanager
def use_engine(spec: EngineSpec | None) -> Iterator[LocalEngine | RayEngine]:
    """Run the block's heavy work on ``spec``'s engine; a local Ray started here is shut down after."""
    eng = make_engine(spec or EngineSpec())
    token = _current.set(eng)
    try:
        yield eng
    finally:
        _current.reset(token)
        if isinstance(eng, RayEngine):
            eng.close()


def shards(n: int, parts: int) -> list[tuple[int, int]]:
    """``n`` items cut into at most ``parts`` contiguous [start, stop) ranges of near-equal size, in order."""
    parts = max(1, min(parts, n))
    q, r = divmod(n, parts)
    out, start = [], 0
    for i in range(parts):
        stop = start + q + (i < r)
        out.append((start, stop))
        start = stop
    return [s for s in out if s[1] > s[0]]
