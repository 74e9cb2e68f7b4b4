"""Point-in-time candidate pools (seed 000 §3.3, App. A.3; docs/method.md §3).

For every anchor of decision day D: filter first (only passages with ``public_time <
decision_time(D)`` within the pool look-back, less the anchor, exact-URL matches, title duplicates
and its near-duplicate cluster), score the company's and same-sector peers' passages with BM25 (statistics
of the corpus public before decision_time, :mod:`.lexical`) and dense cosine, select at most M0 = 20
by the hybrid score with peers capped at 20% of the pool, and rank by static relevance within the
pool. ``kernel="numba"`` (default, the fused kernels of :mod:`.kernels`) and ``kernel="numpy"`` (the
reference) give identical frames, to the bit. The rules: docs/retrieval.md, "Candidate pools"; the
two implementations: "`core/retrieval/kernels.py`: design notes" there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import polars as pl

from .lexical import PrefixStats, StatsView, TermMatrix, bm25_tokens, query_csr, query_matrix

NO_PEER_SECTORS = frozenset({"Unknown", "ETF", ""})


@dataclass(frozen=True)
class PoolConfig:
    m0: int = 20
    peer_share: float = 0.20
    lookback_ns: int | None = None  # only passages newer than decision_time - lookback (None: all history)
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25

    @property
    def peer_cap(self) -> int:
        return int(np.floor(self.peer_share * self.m0 + 1e-9))


def minmax(x: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1]; a constant vector maps to 0.5."""
    if x.size == 0:
        return x.astype(np.float64)
    lo, hi = float(x.min()), float(x.max())
    if hi - lo <= 0:
        return np.full(x.shape, 0.5)
    return (x - lo) / (hi - lo)


def _codes(values: pl.Series, empty_is_missing: bool = True) -> np.ndarray:
    """int64 codes of a string column (equal strings, equal codes: polars' categorical code, which
    is >= 0); empty and missing values get -1 when ``empty_is_missing``."""
    v = values.cast(pl.Utf8)
    out = v.fill_null("").cast(pl.Categorical).to_physical().cast(pl.Int64).to_numpy().copy()
    if empty_is_missing:
        out[(v.is_null() | (v == "")).fill_null(True).to_numpy()] = -1
    return np.ascontiguousarray(out, dtype=np.int64)


@dataclass
class Store:
    """Evidence visible to a range of decisions, sorted by (public_time, passage_id)."""

    passage_id: np.ndarray  # object
    public_ns: np.ndarray  # int64
    ticker: np.ndarray  # object
    sector: np.ndarray  # object
    family: np.ndarray  # object
    ticker_code: np.ndarray  # int64 code per ticker
    url_code: np.ndarray  # int64 code per distinct value of the column; -1 for empty/missing
    title_code: np.ndarray
    cluster_code: np.ndarray
    emb: np.ndarray  # (n, 384) float32
    tm: TermMatrix
    row_of: dict[str, int]
    sector_rows: dict[str, np.ndarray]
    ticker_rows: dict[str, np.ndarray]
    blocks: dict = field(default_factory=dict)  # (kind, key) -> (rows, emb block, X block, doc lengths)

    def block(self, kind: str, key: str):
        """Rows of a sector (or ticker) with their embeddings and term counts stored contiguously,
        so a day's eligible range is a slice (a view), not a gather of 384-float rows."""
        b = self.blocks.get((kind, key))
        if b is None:
            rows = (self.sector_rows if kind == "sector" else self.ticker_rows).get(key)
            if rows is None:
                return None
            b = (rows, np.ascontiguousarray(self.emb[rows]), self.tm.X[rows], self.tm.doc_len[rows])
            self.blocks[(kind, key)] = b
        return b

    def postings(self, kind: str, key: str):
        """(rows, embeddings, CSC term counts (col_ptr, positions, counts), lengths) of a block,
        cached: the kernels' BM25 reads only the query terms' postings."""
        b = self.blocks.get(("csc", kind, key))
        if b is None:
            blk = self.block(kind, key)
            if blk is None:
                return None
            rows, emb, X, dl = blk
            Xc = X.tocsc()
            Xc.sort_indices()
            csc = (np.asarray(Xc.indptr, dtype=np.int64), np.asarray(Xc.indices, dtype=np.int32), np.asarray(Xc.data, dtype=np.int32))
            b = (rows, emb, csc, np.ascontiguousarray(dl, dtype=np.int64))
            self.blocks[("csc", kind, key)] = b
        return b

    @staticmethod
    def from_evidence(ev: pl.DataFrame, threads: bool = True) -> "Store":
        """The store of an evidence table; with ``threads`` the term matrix (numba, no GIL) is
        built on a second thread while this one builds the id and code columns."""
        ev = ev.sort(["public_time", "passage_id"])
        texts = ev["text"]
        if threads:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(1) as ex:
                fut = ex.submit(TermMatrix.from_series, texts)
                store = Store._columns_of(ev)
                store.tm = fut.result()
        else:
            store = Store._columns_of(ev)
            store.tm = TermMatrix.from_series(texts)
        return store

    @staticmethod
    def _columns_of(ev: pl.DataFrame, emb: np.ndarray | None = None) -> "Store":
        """Everything of the store but its term matrix (``tm`` is None until set); ``emb``: the
        rows' embeddings when ``ev`` has no ``embedding`` column."""
        n = ev.height
        tm = None
        pid = np.array(ev["passage_id"].to_list(), dtype=object)
        tick = np.array(ev["ticker"].to_list(), dtype=object)
        sect = np.array(ev["sector"].to_list(), dtype=object)
        if emb is None:
            emb = np.ascontiguousarray(ev["embedding"].to_numpy(), dtype=np.float32) if n else np.zeros((0, 384), np.float32)
        store = Store(
            passage_id=pid,
            public_ns=ev["public_time"].dt.epoch("ns").to_numpy().astype(np.int64),
            ticker=tick,
            sector=sect,
            ticker_code=_codes(ev["ticker"], empty_is_missing=False),
            family=np.array(ev["source_family"].to_list(), dtype=object),
            url_code=_codes(ev["url"]),
            title_code=_codes(ev["title_key"]),
            cluster_code=_codes(ev["dup_cluster"]),
            emb=emb,
            tm=tm,
            row_of=dict(zip(pid.tolist(), range(n))),
            sector_rows={},
            ticker_rows={},
        )
        order = np.arange(n)
        for key, arr, target in (("sector", sect, store.sector_rows), ("ticker", tick, store.ticker_rows)):
            if n:
                s = pl.DataFrame({"k": arr.tolist(), "i": order}).group_by("k", maintain_order=True).agg(pl.col("i"))
                for k, idx in zip(s["k"].to_list(), s["i"]):
                    target[k] = np.asarray(idx.to_numpy() if hasattr(idx, "to_numpy") else idx, dtype=np.int64)
        return store

    def columns(self) -> dict[str, pl.Series]:
        """passage_id, ticker and source_family as string Series (cached) for building frames."""
        c = self.blocks.get(("columns",))
        if c is None:
            c = {
                k: pl.Series(k, v.tolist(), dtype=pl.Utf8)
                for k, v in (("passage_id", self.passage_id), ("ticker", self.ticker), ("source_family", self.family))
            }
            self.blocks[("columns",)] = c
        return c

    def __len__(self) -> int:
        return len(self.passage_id)

    def prefix_end(self, decision_ns: int) -> int:
        """Number of passages with public_time < decision time (the visible prefix)."""
        return int(np.searchsorted(self.public_ns, decision_ns, side="left"))


CANDIDATE_SCHEMA = {
    "anchor_id": pl.Utf8,
    "passage_id": pl.Utf8,
    "rank": pl.Int32,
    "bm25": pl.Float64,
    "dense": pl.Float64,
    "relevance": pl.Float64,
    "is_peer": pl.Boolean,
    "source_family": pl.Utf8,
    "ticker": pl.Utf8,
}


def eligible_rows(store: Store, ticker: str, sector: str, lo: int, hi: int) -> np.ndarray:
    """Store rows in [lo, hi) of the company, plus same-sector peers when the sector is known."""
    src = store.ticker_rows.get(ticker) if sector in NO_PEER_SECTORS else store.sector_rows.get(sector)
    if src is None:
        return np.zeros(0, dtype=np.int64)
    a, b = np.searchsorted(src, lo, "left"), np.searchsorted(src, hi, "left")
    return src[a:b]


def eligible_block(store: Store, ticker: str, sector: str, lo: int, hi: int):
    """(rows, embeddings, term counts, lengths) of the eligible range, as slices of a cached block."""
    blk = store.block("ticker", ticker) if sector in NO_PEER_SECTORS else store.block("sector", sector)
    if blk is None:
        return None
    src, emb, X, dl = blk
    a, b = int(np.searchsorted(src, lo, "left")), int(np.searchsorted(src, hi, "left"))
    if b <= a:
        return None
    return src[a:b], emb[a:b], X[a:b], dl[a:b]


def select_pool(sel: np.ndarray, is_peer: np.ndarray, recency: np.ndarray, m0: int, peer_cap: int) -> np.ndarray:
    """Indices (into sel) of the pool: best hybrid first, peers admitted while within the cap."""
    n = len(sel)
    k = min(n, 3 * m0)
    if k < n:  # only the best 3*M0 can be chosen unless peers crowd them out (then sort all)
        top = np.argpartition(-sel, k - 1)[:k]
        cut = sel[top].min()
        top = np.flatnonzero(sel >= cut)  # keep ties at the cut so the order does not depend on argpartition
    else:
        top = np.arange(n)
    order = top[np.lexsort((-recency[top], -sel[top]))]
    peers = is_peer[order]
    admit = ~peers | (np.cumsum(peers) <= peer_cap)
    picked = order[admit][:m0]
    if len(picked) < m0 and len(top) < n:
        return _select_all(sel, is_peer, recency, m0, peer_cap)
    return picked


def _select_all(sel: np.ndarray, is_peer: np.ndarray, recency: np.ndarray, m0: int, peer_cap: int) -> np.ndarray:
    order = np.lexsort((-recency, -sel))
    peers = is_peer[order]
    admit = ~peers | (np.cumsum(peers) <= peer_cap)
    return order[admit][:m0]


KERNELS = ("numba", "numpy")


def _group_numpy(
    store: Store, stats: StatsView, idf: np.ndarray, blk, js: list[int], arows: np.ndarray, queries: list[list[int]], cfg: PoolConfig
) -> list[tuple]:
    """The numpy reference for one (day, sector) group: one sparse BM25 product and one dense
    product for the group, then numpy masks, min-max and selection per anchor."""
    rows, emb_rows, X_rows, dl_rows = blk
    W = stats.weights(rows, X_rows, dl_rows)
    Q = query_matrix([queries[j] for j in js], W.shape[1], idf)
    B = np.ascontiguousarray((Q @ W.T).toarray())  # (anchors, rows): one contiguous row per anchor
    D = (store.emb[arows[js]] @ emb_rows.T).astype(np.float64)
    tick_rows = store.ticker_code[rows]
    url_rows, title_rows, cl_rows = store.url_code[rows], store.title_code[rows], store.cluster_code[rows]
    recency = rows.astype(np.float64)
    parts = []
    for c, j in enumerate(js):
        ar = arows[j]
        keep = rows != ar
        if store.url_code[ar] >= 0:
            keep &= url_rows != store.url_code[ar]
        if store.title_code[ar] >= 0:
            keep &= title_rows != store.title_code[ar]
        if store.cluster_code[ar] >= 0:
            keep &= cl_rows != store.cluster_code[ar]
        idx = np.flatnonzero(keep)
        if idx.size == 0:
            continue
        bc, dc = B[c], D[c]
        b, d = bc[idx], dc[idx]
        peer = tick_rows[idx] != store.ticker_code[ar]
        sel = (minmax(b) + minmax(d)) / 2
        pick = idx[select_pool(sel, peer, recency[idx], cfg.m0, cfg.peer_cap)]
        pb, pd = bc[pick], dc[pick]
        r = (minmax(pb) + minmax(pd)) / 2
        order = np.lexsort((-recency[pick], -r))
        k = len(pick)
        parts.append((np.full(k, j), rows[pick][order], np.arange(1, k + 1), pb[order], pd[order], r[order]))
    return parts


@dataclass(frozen=True)
class _DayInputs:
    """What every (day, sector) group of one decision day shares: the store and its frozen BM25 view,
    the anchors' store rows, queries and tickers, the visible rows [lo, hi) and the kernel."""

    store: Store
    stats: StatsView
    idf: np.ndarray
    arows: np.ndarray
    queries: list[list[int]]
    qcsr: tuple | None
    a_tick: list[str]
    lo: int
    hi: int
    cfg: PoolConfig
    use_numba: bool


def _group_numba(day: _DayInputs, post, a: int, b: int, js: list[int]) -> list[tuple] | None:
    """The fused kernels for one group (same results as :func:`_group_numpy`); None when an
    anchor's scores need the reference (non-finite or negative-zero scores)."""
    from .kernels import bm25_window, select_window

    store, stats, arows, qcsr, cfg = day.store, day.stats, day.arows, day.qcsr, day.cfg

    src, emb_blk, (col_ptr, col_pos, col_tf), dl_blk = post
    rows = src[a:b]
    qsel = np.asarray(js, dtype=np.int64)
    B = bm25_window(col_ptr, col_pos, col_tf, dl_blk, a, b, *qcsr, qsel, stats.k1, stats.b, stats.avgdl)
    a_rows = arows[qsel]
    D = store.emb[a_rows] @ emb_blk[a:b].T  # float32 (anchors, rows): the reference's product before widening
    pos, cnt, pb, pd, rel, status = select_window(
        B, D, rows, store.ticker_code, store.url_code, store.title_code, store.cluster_code, a_rows, cfg.m0, cfg.peer_cap
    )
    if status.any():
        return None
    m = np.arange(cfg.m0)[None, :] < cnt[:, None]
    rank = np.broadcast_to(np.arange(1, cfg.m0 + 1, dtype=np.int64), pos.shape)
    return [(np.repeat(qsel, cnt), rows[pos[m]], rank[m], pb[m], pd[m], rel[m])]


@lru_cache(maxsize=1)
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread():
    """The dense products on one BLAS thread: with two, BLAS splits an (anchors × rows) product
    differently by shape and thread count, which changed scores in their last bits; one thread
    makes them the same on every machine (and was faster on this shared 2-core box)."""
    return _blas_controller().limit(limits=1, user_api="blas")


def _group(day: _DayInputs, t: str, s: str, js: list[int]) -> list[tuple]:
    """One (day, sector) group's candidate parts (numba kernels, else the reference). Pure given
    its arguments (``day.stats`` is a frozen view), so groups may run on any thread in any order."""
    store, stats, idf, arows, queries, a_tick, lo, hi, cfg = (
        day.store,
        day.stats,
        day.idf,
        day.arows,
        day.queries,
        day.a_tick,
        day.lo,
        day.hi,
        day.cfg,
    )
    kind, key = ("ticker", t or a_tick[js[0]]) if s in NO_PEER_SECTORS else ("sector", s)
    if day.use_numba:
        post = store.postings(kind, key)
        if post is None:
            return []
        src = post[0]
        a, b = int(np.searchsorted(src, lo, "left")), int(np.searchsorted(src, hi, "left"))
        if b <= a:
            return []
        got = _group_numba(day, post, a, b, js)
        if got is not None:
            return got
    blk = eligible_block(store, t or a_tick[js[0]], s, lo, hi)
    if blk is None:
        return []
    return _group_numpy(store, stats, idf, blk, js, arows, queries, cfg)


@dataclass
class PendingDay:
    """A decision day's groups, submitted or done; :meth:`frame` assembles the candidates."""

    store: Store
    anchors: pl.DataFrame
    groups: list  # per group: a list of parts, or a Future of one

    def frame(self) -> pl.DataFrame:
        parts: list[tuple] = []
        for g in self.groups:  # group order is fixed by the anchors, whatever thread ran it
            parts.extend(g.result() if hasattr(g, "result") else g)
        if not parts:
            return pl.DataFrame(schema=CANDIDATE_SCHEMA)
        aj = np.concatenate([p[0] for p in parts])
        prow = np.concatenate([p[1] for p in parts])
        cols = self.store.columns()
        a_tick_s = pl.Series(self.anchors["ticker"].to_list(), dtype=pl.Utf8).gather(aj)
        p_tick_s = cols["ticker"].gather(prow)
        return pl.DataFrame(
            {
                "anchor_id": pl.Series(self.anchors["anchor_id"].to_list(), dtype=pl.Utf8).gather(aj),
                "passage_id": cols["passage_id"].gather(prow),
                "rank": np.concatenate([p[2] for p in parts]),
                "bm25": np.concatenate([p[3] for p in parts]),
                "dense": np.concatenate([p[4] for p in parts]),
                "relevance": np.concatenate([p[5] for p in parts]),
                "is_peer": p_tick_s.ne_missing(a_tick_s),
                "source_family": cols["source_family"].gather(prow),
                "ticker": p_tick_s,
            },
            schema=CANDIDATE_SCHEMA,
        )


def start_day_candidates(
    store: Store,
    stats: PrefixStats,
    anchors: pl.DataFrame,
    decision_ns: int,
    cfg: PoolConfig,
    kernel: str = "numba",
    executor=None,
) -> PendingDay:
    """Advance the BM25 statistics to decision_ns and start the day's (sector) groups, on
    ``executor`` (a ``concurrent.futures`` thread pool) when given, else here. The caller holds
    :func:`one_blas_thread` until the day's frame is built (a thread may not change it mid-run)."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, not {kernel!r}")
    hi = store.prefix_end(decision_ns)
    lo = 0 if cfg.lookback_ns is None else int(np.searchsorted(store.public_ns, decision_ns - cfg.lookback_ns, "left"))
    stats.advance(hi)
    view = stats.view()
    idf = view.idf()
    if anchors.height == 0:
        return PendingDay(store, anchors, [])
    arows = []
    for pid in anchors["passage_id"].to_list():
        r = store.row_of.get(pid)
        if r is None:
            raise KeyError(f"anchor passage {pid} is not in the evidence store")
        arows.append(r)
    arows = np.asarray(arows, dtype=np.int64)
    vocab = store.tm.vocab
    queries = [vocab.lookup(bm25_tokens(h + " " + s)) for h, s in zip(anchors["headline"].to_list(), anchors["summary"].to_list())]
    groups: dict[tuple[str, str], list[int]] = {}
    for j, (t, s) in enumerate(zip(anchors["ticker"].to_list(), anchors["sector"].to_list())):
        key = (t, s) if s in NO_PEER_SECTORS else ("", s)
        groups.setdefault(key, []).append(j)
    a_tick = anchors["ticker"].to_list()
    use_numba = kernel == "numba" and cfg.m0 > 0
    qcsr = query_csr(queries, idf) if use_numba else None
    day = _DayInputs(store, view, idf, arows, queries, qcsr, a_tick, lo, hi, cfg, use_numba)
    out = []
    for (t, s), js in groups.items():
        if executor is None:
            out.append(_group(day, t, s, js))
        else:
            kind, key = ("ticker", t or a_tick[js[0]]) if s in NO_PEER_SECTORS else ("sector", s)
            store.postings(kind, key) if use_numba else store.block(kind, key)  # build shared caches here, once
            out.append(executor.submit(_group, day, t, s, js))
    return PendingDay(store, anchors, out)


def build_day_candidates(
    store: Store,
    stats: PrefixStats,
    anchors: pl.DataFrame,
    decision_ns: int,
    cfg: PoolConfig,
    kernel: str = "numba",
) -> pl.DataFrame:
    """Candidate pools of the anchors of one decision day (all share decision_ns).

    ``kernel="numba"`` (default) runs the fused kernels of :mod:`.kernels`; ``"numpy"`` the
    reference implementation. Both give identical frames (ids, order, scores to the bit)."""
    with one_blas_thread():
        return start_day_candidates(store, stats, anchors, decision_ns, cfg, kernel).frame()
