"""BM25 (Okapi, rank_bm25's exact formula) over a time-ordered passage store, vectorised.

Point-in-time statistics: for a decision time T the corpus is the prefix of the store with
public_time < T (the store is sorted by public time), so N, document frequencies, avgdl and
the IDF epsilon floor all come from documents public before T; a term that only occurs in later
documents has IDF 0, exactly as it would in ``rank_bm25.BM25Okapi(corpus_T)``. Term weights use
rank_bm25's expression term by term, so scores equal ``BM25Okapi(corpus_T).get_scores(q)`` up to
floating-point summation order (tested to 1e-12).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import scipy.sparse as sp

from ..text import _TOKEN, ENGLISH_STOP_WORDS, tokens

TOKEN_PATTERN = _TOKEN.pattern  # the tokenizer of core.text.tokens, run by polars

STOP = frozenset(ENGLISH_STOP_WORDS)


def bm25_tokens(text: str | None) -> list[str]:
    """The BM25 tokenizer: lower-case word/number tokens without English stop words."""
    return [t for t in tokens(text) if t not in STOP]


def _utf8_buffers(s: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, int64 offsets) of a non-null string Series (one contiguous Arrow large_string)."""
    arr = s.to_arrow(compat_level=pl.CompatLevel.oldest())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if arr.type != pa.large_string():
        arr = arr.cast(pa.large_string())
    _, off, dat = arr.buffers()
    offsets = np.frombuffer(off, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(dat, dtype=np.uint8) if dat is not None and dat.size else np.zeros(1, dtype=np.uint8)
    data.flags.writeable = False
    return data, np.array(offsets, dtype=np.int64)  # a writable copy: one kernel signature


_STOP_BUFFERS: tuple[np.ndarray, np.ndarray] | None = None


def _stop_buffers() -> tuple[np.ndarray, np.ndarray]:
    global _STOP_BUFFERS
    if _STOP_BUFFERS is None:
        words = sorted(STOP)
        data = np.frombuffer("".join(words).encode("ascii"), dtype=np.uint8)
        offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int64)
        _STOP_BUFFERS = (data, offsets)
    return _STOP_BUFFERS


class Vocabulary:
    """Term ids in first-occurrence order (document order, then token order), like rank_bm25's dict."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, toks: list[str]) -> list[int]:
        ids = self.ids
        out = []
        for t in toks:
            i = ids.get(t)
            if i is None:
                i = ids[t] = len(ids)
            out.append(i)
        return out

    def lookup(self, toks: list[str]) -> list[int]:
        return [self.ids[t] for t in toks if t in self.ids]


@dataclass
class TermMatrix:
    """Term counts of a store (rows in store order) and document lengths."""

    X: sp.csr_matrix  # (docs, vocab) int32 counts
    doc_len: np.ndarray  # int64 token counts
    vocab: Vocabulary

    @staticmethod
    def build(token_lists: list[list[str]], vocab: Vocabulary | None = None) -> "TermMatrix":
        vocab = vocab or Vocabulary()
        indptr = [0]
        indices: list[int] = []
        data: list[int] = []
        lens = np.empty(len(token_lists), dtype=np.int64)
        for r, toks in enumerate(token_lists):
            ids = vocab.add(toks)
            lens[r] = len(ids)
            counts: dict[int, int] = {}
            for i in ids:
                counts[i] = counts.get(i, 0) + 1
            indices.extend(counts.keys())
            data.extend(counts.values())
            indptr.append(len(indices))
        X = sp.csr_matrix(
            (np.asarray(data, dtype=np.int32), np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
            shape=(len(token_lists), len(vocab)),
        )
        X.sort_indices()
        return TermMatrix(X, lens, vocab)

    @staticmethod
    def from_texts(texts: list[str]) -> "TermMatrix":
        """:meth:`build` over ``bm25_tokens`` of each text, vectorised (same tokens, same
        first-occurrence term order, same counts): polars lower-cases, numba kernels tokenise
        the UTF-8 bytes (``TOKEN_PATTERN``, stop words dropped) and count."""
        return TermMatrix.from_series(pl.Series(texts, dtype=pl.Utf8))

    @staticmethod
    def from_series(texts: pl.Series) -> "TermMatrix":
        """:meth:`from_texts` of a polars string Series."""
        from .kernels import count_terms, tokenize

        n = len(texts)
        low = texts.cast(pl.Utf8).fill_null("").str.to_lowercase().rechunk()
        data, offsets = _utf8_buffers(low)
        tid, lens, arena, t_start, t_len = tokenize(data, offsets, *_stop_buffers())
        ab = arena.tobytes()
        vocab = Vocabulary()
        vocab.ids = {ab[a : a + k].decode("ascii"): i for i, (a, k) in enumerate(zip(t_start.tolist(), t_len.tolist()))}
        doc_ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        indptr, indices, data_ = count_terms(doc_ptr, tid, len(vocab))
        X = sp.csr_matrix((data_, indices, indptr), shape=(n, len(vocab)))
        return TermMatrix(X, lens, vocab)

    def widen(self) -> None:
        """Grow the column count after the vocabulary grew (query terms added later)."""
        if self.X.shape[1] < len(self.vocab):
            self.X = sp.csr_matrix((self.X.data, self.X.indices, self.X.indptr), shape=(self.X.shape[0], len(self.vocab)))


class PrefixStats:
    """BM25Okapi corpus statistics of the store prefix [0, n), advanced incrementally."""

    def __init__(self, tm: TermMatrix, k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25):
        self.tm, self.k1, self.b, self.epsilon = tm, k1, b, epsilon
        self.n = 0
        self.df = np.zeros(tm.X.shape[1], dtype=np.int64)
        self.total_len = 0
        self._idf: tuple[int, np.ndarray] | None = None

    def advance(self, n: int) -> None:
        """Include documents [self.n, n) (n never decreases: decisions move forward in time)."""
        if n < self.n:
            raise ValueError("PrefixStats only moves forward in time")
        if n > self.n:
            block = self.tm.X[self.n : n]
            self.df += np.bincount(block.indices, minlength=self.df.shape[0])[: self.df.shape[0]]
            self.total_len += int(self.tm.doc_len[self.n : n].sum())
            self.n = n

    @property
    def avgdl(self) -> float:
        return self.total_len / self.n if self.n else 0.0

    def idf(self) -> np.ndarray:
        """rank_bm25 BM25Okapi idf with the epsilon floor; 0 for terms absent from the prefix."""
        if self._idf is not None and self._idf[0] == self.n and self._idf[1].shape[0] == self.df.shape[0]:
            return self._idf[1]
        out = np.zeros(self.df.shape[0], dtype=np.float64)
        present = np.flatnonzero(self.df)  # term ids are in first-occurrence order
        if self.n and present.size:
            f = self.df[present].astype(np.float64)
            raw = np.log(self.n - f + 0.5) - np.log(f + 0.5)
            avg = float(np.cumsum(raw)[-1]) / present.size  # sequential sum, as rank_bm25 accumulates
            raw[raw < 0] = self.epsilon * avg
            out[present] = raw
        self._idf = (self.n, out)
        return out

    def view(self) -> "StatsView":
        """The statistics as they stand now, frozen: later ``advance`` calls do not change it
        (a day's scoring can run on another thread while the next day advances)."""
        return StatsView(self.tm, self.k1, self.b, self.avgdl, self.idf())

    def weights(self, rows: np.ndarray, sub: sp.csr_matrix | None = None, doc_len: np.ndarray | None = None) -> sp.csr_matrix:
        """Saturated term weights of some store rows under the current statistics (see :meth:`StatsView.weights`)."""
        return self.view().weights(rows, sub, doc_len)


@dataclass(frozen=True)
class StatsView:
    """BM25Okapi statistics of one store prefix (k1, b, average document length, idf)."""

    tm: TermMatrix
    k1: float
    b: float
    avgdl: float
    idf_values: np.ndarray

    def idf(self) -> np.ndarray:
        return self.idf_values

    def weights(self, rows: np.ndarray, sub: sp.csr_matrix | None = None, doc_len: np.ndarray | None = None) -> sp.csr_matrix:
        """Saturated term weights tf(k1+1)/(tf + k1(1-b+b·dl/avgdl)) of some store rows
        (``sub``/``doc_len``: those rows' counts and lengths when the caller already has them)."""
        if sub is None:
            sub = self.tm.X[rows]
            doc_len = self.tm.doc_len[rows]
        tf = sub.data.astype(np.float64)
        dl = np.repeat(doc_len.astype(np.float64), np.diff(sub.indptr))
        k1, b, avgdl = self.k1, self.b, self.avgdl
        w = tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
        return sp.csr_matrix((w, sub.indices, sub.indptr), shape=sub.shape)


def query_csr(queries: list[list[int]], idf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, data) of the query weights: per query its distinct terms ascending, each
    weighted idf x (number of times the term occurs in the query), 0 for a term beyond ``idf``;
    int64 indices, float64 data."""
    lens = np.fromiter((len(q) for q in queries), dtype=np.int64, count=len(queries))
    flat = np.fromiter(itertools.chain.from_iterable(queries), dtype=np.int64, count=int(lens.sum()))
    qid = np.repeat(np.arange(len(queries), dtype=np.int64), lens)
    width = max(int(idf.shape[0]), int(flat.max()) + 1 if flat.size else 0, 1)
    key, counts = np.unique(qid * width + flat, return_counts=True)  # sorted by (query, term)
    q, t = np.divmod(key, width)
    inside = t < idf.shape[0]
    data = np.zeros(t.shape[0], dtype=np.float64)
    data[inside] = idf[t[inside]] * counts[inside]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(q, minlength=len(queries)))]).astype(np.int64)
    return indptr, t.astype(np.int64), data


def query_matrix(queries: list[list[int]], n_terms: int, idf: np.ndarray) -> sp.csr_matrix:
    """(queries, vocab) weights: idf × (number of times the term occurs in the query)."""
    indptr, indices, data = [0], [], []
    for q in queries:
        counts: dict[int, int] = {}
        for t in q:
            counts[t] = counts.get(t, 0) + 1
        for t, c in sorted(counts.items()):
            indices.append(t)
            data.append(idf[t] * c if t < idf.shape[0] else 0.0)
        indptr.append(len(indices))
    return sp.csr_matrix((np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int64), np.asarray(indptr)), shape=(len(queries), n_terms))


def bm25_scores(stats: PrefixStats, rows: np.ndarray, queries: list[list[int]]) -> np.ndarray:
    """(len(rows), len(queries)) BM25Okapi scores of store rows for term-id queries."""
    if len(rows) == 0 or not queries:
        return np.zeros((len(rows), len(queries)))
    W = stats.weights(rows)
    Q = query_matrix(queries, W.shape[1], stats.idf())
    return np.asarray((W @ Q.T).todense())
