"""Point-in-time candidate pools (seed 000 §3.3, App. A.3; SPEC §3).

For every anchor of decision day D:

1. **Filter first** — only passages with ``public_time < decision_time(D)`` (and within the pool
   look-back) exist for the anchor; the anchor itself, exact-URL matches, title duplicates and
   members of the anchor's near-duplicate cluster are removed before any scoring.
2. **Score** the eligible passages of the anchor's company and same-sector peers with BM25
   (statistics of the corpus public before decision_time, see :mod:`.lexical`) and dense cosine
   (frozen MiniLM vectors from the evidence table).
3. **Select** at most M0 = 20 by the equal-weight hybrid of the two scores min-max normalised over
   the eligible set, walking down that ranking and admitting company passages freely and peers
   while they stay within 20% of the pool (4 of 20): the pool is primarily company-matched.
4. **Static relevance** r = mean of min-max-normalised BM25 and min-max-normalised cosine *within
   the pool* (a constant score normalises to 0.5); rank 1 = highest r.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from .lexical import PrefixStats, TermMatrix, Vocabulary, bm25_tokens, query_matrix

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


@dataclass
class Store:
    """Evidence visible to a range of decisions, sorted by (public_time, passage_id)."""

    passage_id: np.ndarray  # object
    public_ns: np.ndarray  # int64
    ticker: np.ndarray  # object
    sector: np.ndarray  # object
    family: np.ndarray  # object
    ticker_code: np.ndarray  # int64 code per ticker
    url_code: np.ndarray  # int64 codes shared by url/title/cluster columns
    title_code: np.ndarray
    cluster_code: np.ndarray
    emb: np.ndarray  # (n, 384) float32
    tm: TermMatrix
    codes: dict[str, int]
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

    @staticmethod
    def from_evidence(ev: pl.DataFrame) -> "Store":
        ev = ev.sort(["public_time", "passage_id"])
        n = ev.height
        codes: dict[str, int] = {"": -1}

        def enc(values) -> np.ndarray:
            out = np.empty(len(values), dtype=np.int64)
            for i, v in enumerate(values):
                if not v:
                    out[i] = -1
                    continue
                c = codes.get(v)
                if c is None:
                    c = codes[v] = len(codes)
                out[i] = c
            return out

        tm = TermMatrix.from_texts(ev["text"].to_list())
        pid = np.array(ev["passage_id"].to_list(), dtype=object)
        tick = np.array(ev["ticker"].to_list(), dtype=object)
        sect = np.array(ev["sector"].to_list(), dtype=object)
        emb = ev["embedding"].to_numpy().astype(np.float32) if n else np.zeros((0, 384), np.float32)
        store = Store(
            passage_id=pid,
            public_ns=ev["public_time"].dt.epoch("ns").to_numpy().astype(np.int64),
            ticker=tick,
            sector=sect,
            ticker_code=np.unique(tick.astype(str), return_inverse=True)[1].astype(np.int64) if n else np.zeros(0, np.int64),
            family=np.array(ev["source_family"].to_list(), dtype=object),
            url_code=enc(ev["url"].to_list()),
            title_code=enc(ev["title_key"].to_list()),
            cluster_code=enc(ev["dup_cluster"].to_list()),
            emb=np.ascontiguousarray(emb),
            tm=tm,
            codes=codes,
            row_of={p: i for i, p in enumerate(pid)},
            sector_rows={},
            ticker_rows={},
        )
        order = np.arange(n)
        for key, arr, target in (("sector", sect, store.sector_rows), ("ticker", tick, store.ticker_rows)):
            if n:
                s = pl.DataFrame({"k": arr.tolist(), "i": order}).group_by("k", maintain_order=True).agg(pl.col("i"))
                for k, idx in zip(s["k"], s["i"]):
                    target[k] = np.asarray(idx.to_list() if hasattr(idx, "to_list") else idx, dtype=np.int64)
        return store

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


def build_day_candidates(
    store: Store,
    stats: PrefixStats,
    anchors: pl.DataFrame,
    decision_ns: int,
    cfg: PoolConfig,
) -> pl.DataFrame:
    """Candidate pools of the anchors of one decision day (all share decision_ns)."""
    hi = store.prefix_end(decision_ns)
    lo = 0 if cfg.lookback_ns is None else int(np.searchsorted(store.public_ns, decision_ns - cfg.lookback_ns, "left"))
    stats.advance(hi)
    idf = stats.idf()
    parts: list[tuple] = []
    if anchors.height == 0:
        return pl.DataFrame(schema=CANDIDATE_SCHEMA)
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
    a_ids = anchors["anchor_id"].to_list()
    a_tick = anchors["ticker"].to_list()
    for (t, s), js in groups.items():
        blk = eligible_block(store, t or a_tick[js[0]], s, lo, hi)
        if blk is None:
            continue
        rows, emb_rows, X_rows, dl_rows = blk
        W = stats.weights(rows, X_rows, dl_rows)
        Q = query_matrix([queries[j] for j in js], W.shape[1], idf)
        B = np.ascontiguousarray((Q @ W.T).toarray())  # (anchors, rows): one contiguous row per anchor
        D = (store.emb[arows[js]] @ emb_rows.T).astype(np.float64)
        tick_rows = store.ticker_code[rows]
        url_rows, title_rows, cl_rows = store.url_code[rows], store.title_code[rows], store.cluster_code[rows]
        recency = rows.astype(np.float64)
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
            parts.append((j, rows[pick][order], pb[order], pd[order], r[order]))
    if not parts:
        return pl.DataFrame(schema=CANDIDATE_SCHEMA)
    prow = np.concatenate([p[1] for p in parts])
    aj = np.concatenate([np.full(len(p[1]), p[0]) for p in parts])
    a_tick_arr = np.asarray(a_tick, dtype=object)[aj]
    return pl.DataFrame(
        {
            "anchor_id": np.asarray(a_ids, dtype=object)[aj],
            "passage_id": store.passage_id[prow],
            "rank": np.concatenate([np.arange(1, len(p[1]) + 1) for p in parts]),
            "bm25": np.concatenate([p[2] for p in parts]),
            "dense": np.concatenate([p[3] for p in parts]),
            "relevance": np.concatenate([p[4] for p in parts]),
            "is_peer": store.ticker[prow] != a_tick_arr,
            "source_family": store.family[prow],
            "ticker": store.ticker[prow],
        },
        schema=CANDIDATE_SCHEMA,
    )
