"""The ``llama_cpp`` backend: a local GGUF model through llama-cpp-python, with JSON-schema-
constrained decoding (the default model: :func:`.base.default_gguf`)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

from .base import Backend, BackendConfig, BackendUnavailable, Generation, Request, default_gguf, dist_version


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
        from ..native_check import check_llama_cpp

        check_llama_cpp(path)  # a build that crashes on this CPU stops here with its paragraph, not in a segfault
        self._llm = Llama(model_path=path, n_ctx=cfg.n_ctx, n_threads=cfg.n_threads, seed=0, verbose=False, logits_all=False)

    @property
    def model(self) -> str:
        return Path(self._path).name

    def engine_key(self) -> dict:
        """The GGUF's content and llama.cpp's version (thread count left 24 of 24 answers unchanged,
        docs/reader.md): the same file under another name is a hit, new weights under this name a miss."""
        from ..model_path import weights_fingerprint

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
