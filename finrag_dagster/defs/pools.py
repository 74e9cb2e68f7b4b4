"""Concurrency pools (docs/production.md): what may not run twice at once on one machine.

``finrag_reader``: the loop steps of a reader that holds an engine in this machine's memory (a GPU
engine: vllm, transformers; llama.cpp's model on the CPU) and the LoRA training; ``finrag_embedding``:
the evidence step, which embeds passages with MiniLM. Their limits are the instance's
(``concurrency: pools: default_limit`` in .dagster_home/dagster.yaml: 1, one engine at a time;
``dagster instance concurrency set finrag_reader 2`` or the UI's Deployment page for another).
The embedded readers hold no engine: their families' loops stay free to run side by side.
"""

from __future__ import annotations

from ..core.settings import Settings

READER_POOL = "finrag_reader"
EMBEDDING_POOL = "finrag_embedding"
ENGINE_READERS = ("vllm", "transformers", "llama_cpp")


def reader_pool(s: Settings) -> str | None:
    """The loop's pool: ``finrag_reader`` for a reader that loads an engine here, else none."""
    return READER_POOL if s.reader.backend in ENGINE_READERS else None
