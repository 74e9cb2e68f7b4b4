"""BM25 (Okapi, rank_bm25's exact formula) over a time-ordered passage store, vectorised.

Point-in-time statistics: for a decision time T the corpus is the prefix of the store with
public_time < T (the store is sorted by public time), so N, document frequencies, avgdl and
the IDF epsilon floor all come from documents public before T; a term that only occurs in later
documents has IDF 0, exactly as it would in ``rank_bm25.BM25Okapi(corpus_T)``. Term weights use
rank_bm25's expression term by term, so scores equal ``BM25Okapi(corpus_T).get_scores(q)`` up to
floating-point summation order (tested to 1e-12).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

import polars as pl

from ..text import _TOKEN, tokens

TOKEN_PATTERN = _TOKEN.pattern  # the tokenizer of core.text.tokens, run by polars

STOP = frozenset(ENGLISH_STOP_WORDS)


def bm25_tokens(text: str | None) -> list[str]:
    """The BM25 tokenizer: lower-case word/number tokens without English stop words."""
    return [t for t in tokens(text) if t not in STOP]


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
        """:meth:`build` over ``bm25_tokens`` of each text, vectorised in polars (same tokens,
        same first-occurrence term order, same counts; ~10x faster on large stores)."""
        n = len(texts)
        toks = (
            pl.DataFrame({"doc": np.arange(n, dtype=np.int64), "t": pl.Series(texts, dtype=pl.Utf8).fill_null("")})
            .with_columns(pl.col("t").str.to_lowercase().str.extract_all(TOKEN_PATTERN))
            .explode("t")
            .drop_nulls("t")
            .with_row_index("pos")
            .filter(~pl.col("t").is_in(sorted(STOP)))
        )
        vocab_terms = toks.select(pl.col("t").unique(maintain_order=True))["t"]
        vocab = Vocabulary()
        vocab.ids = {t: i for i, t in enumerate(vocab_terms.to_list())}
        ids = toks.join(pl.DataFrame({"t": vocab_terms, "tid": np.arange(len(vocab_terms), dtype=np.int64)}), on="t", how="left")
        counts = ids.group_by(["doc", "tid"]).agg(pl.len().alias("c")).sort(["doc", "tid"])
        lens = np.bincount(ids["doc"].to_numpy(), minlength=n).astype(np.int64)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(counts["doc"].to_numpy(), minlength=n))]).astype(np.int64)
        X = sp.csr_matrix(
            (counts["c"].to_numpy().astype(np.int32), counts["tid"].to_numpy().astype(np.int64), indptr),
            shape=(n, len(vocab)),
        )
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
