"""The NumPy query encoder computes all-MiniLM-L6-v2's sentence vectors: equal to the torch
encoder's (sentence-transformers) to float32 rounding, for short, long (truncated), empty and
non-ASCII texts, and without importing torch."""

import subprocess
import sys

import numpy as np

from finrag_dagster.core.embeddings import embed
from finrag_dagster.core.query_encoder import encode_queries

TEXTS = [
    "NVDA gross margin Q3 2021",
    "When did Apple report its fiscal 2020 fourth quarter results? " * 12,  # > 128 tokens: truncated alike
    "",
    "Ünïcödé café résumé 中文, $4.2bn buy-back (+12%)",
    "x",
]


def test_vectors_equal_the_torch_encoders_to_float32_rounding():
    q, t = encode_queries(TEXTS), embed(TEXTS)
    assert q.shape == t.shape == (len(TEXTS), 384) and q.dtype == np.float32
    assert np.abs(q - t).max() < 2e-6
    assert np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-6)
    # and a ranking by cosine is the torch encoder's
    docs = embed(["Nvidia gross margin rose", "Apple results date", "a recipe for apple pie", "Microsoft cloud revenue"])
    for i in range(len(TEXTS)):
        assert np.argsort(-(docs @ q[i])).tolist() == np.argsort(-(docs @ t[i])).tolist()


def test_a_vector_depends_only_on_its_own_text():
    alone = encode_queries([TEXTS[0]])[0]
    together = encode_queries(TEXTS)[0]
    assert alone.tobytes() == together.tobytes()


def test_a_search_imports_neither_torch_nor_sklearn():
    code = (
        "import sys; from finrag_dagster.core.retrieval.engine import SearchEngine; from finrag_dagster.core.query_encoder import encode_queries; "
        "encode_queries(['revenue guidance']); "
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'sklearn', 'dagster') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout
