"""Reader backends, all answering the same :class:`Request` with raw text.

``embedded`` (the deterministic lexicon-and-rules baseline, default; CPU, no download),
``llama_cpp`` (a local GGUF model with JSON-schema-constrained decoding), ``openai`` (any
OpenAI-compatible server; retries, timeouts, the API key redacted by :func:`redact_secrets`),
``vllm`` (offline batched generation with structured outputs, LoRA adapters) and ``transformers``
(base model + optional peft LoRA adapter, no grammar: answers go through :mod:`..parse`). A LoRA
adapter's id is part of ``Backend.model``, hence of every prompt-cache key. Decoding is greedy
everywhere (temperature 0), so a prompt's answer is reproducible and cacheable. Each backend:
docs/reader.md, "Backends" and "Prompt cache". One module per backend, the shared part in
:mod:`.base`; this package re-exports them and picks a backend by name (:func:`make_backend`). A
test replaces a module global in the module that reads it (``backends.vllm.llm_class``).
"""

from __future__ import annotations

from .base import (
    Backend,
    BackendConfig,
    BackendRejected,
    BackendUnavailable,
    Generation,
    Request,
    adapter_identity,
    answers_depend_on_batch,
    default_gguf,
    dist_version,
    key_decoding,
    model_label,
    prompt_key,
    with_adapter,
)
from .embedded import EMBEDDED_READERS, EmbeddedBackend
from .llama_cpp import LlamaCppBackend
from .openai import RETRY_AFTER_STATUS, RETRY_STATUS, OpenAIBackend
from .transformers import TransformersBackend
from .vllm import (
    _ENGINE,
    VllmBackend,
    build_vllm_sampling_params,
    close_vllm_engine,
    llm_class,
    llvmlite_scan_guard,
    shutdown_vllm,
    vllm_deterministic,
    vllm_engine,
    vllm_engine_kwargs,
    vllm_grammar_schema,
    vllm_lora_engine_kwargs,
    vllm_lora_request_kwargs,
    vllm_multiprocessing,
    vllm_on_cpu,
    vllm_version,
)

__all__ = [
    "BACKENDS",
    "EMBEDDED_READERS",
    "RETRY_AFTER_STATUS",
    "RETRY_STATUS",
    "_ENGINE",
    "Backend",
    "BackendConfig",
    "BackendRejected",
    "BackendUnavailable",
    "EmbeddedBackend",
    "Generation",
    "LlamaCppBackend",
    "OpenAIBackend",
    "Request",
    "TransformersBackend",
    "VllmBackend",
    "adapter_identity",
    "answers_depend_on_batch",
    "build_vllm_sampling_params",
    "close_vllm_engine",
    "default_gguf",
    "dist_version",
    "key_decoding",
    "llm_class",
    "llvmlite_scan_guard",
    "make_backend",
    "model_label",
    "prompt_key",
    "shutdown_vllm",
    "vllm_deterministic",
    "vllm_engine",
    "vllm_engine_kwargs",
    "vllm_grammar_schema",
    "vllm_lora_engine_kwargs",
    "vllm_lora_request_kwargs",
    "vllm_multiprocessing",
    "vllm_on_cpu",
    "vllm_version",
    "with_adapter",
]


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
