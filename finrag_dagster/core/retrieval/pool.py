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

from dataclasses import dataclass

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
    url_code: np.ndarray  # int64 codes shared by url/title/cluster columns
    title_code: np.ndarray
    cluster_code: np.ndarray
    emb: np.ndarray  # (n, 384) float32
    tm: TermMatrix
    codes: dict[str, int]
    row_of: dict[str, int]
    sector_rows: dict[str, np.ndarray]
    ticker_rows: dict[str, np.ndarray]

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

        toks = [bm25_tokens(t) for t in ev["text"].to_list()]
        tm = TermMatrix.build(toks, Vocabulary())
        pid = np.array(ev["passage_id"].to_list(), dtype=object)
        tick = np.array(ev["ticker"].to_list(), dtype=object)
        sect = np.array(ev["sector"].to_list(), dtype=object)
        emb = ev["embedding"].to_numpy().astype(np.float32) if n else np.zeros((0, 384), np.float32)
        store = Store(
            passage_id=pid,
            public_ns=ev["public_time"].dt.epoch("ns").to_numpy().astype(np.int64),
            ticker=tick,
            sector=sect,
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


def select_pool(sel: np.ndarray, is_peer: np.ndarray, recency: np.ndarray, m0: int, peer_cap: int) -> np.ndarray:
    """Indices (into sel) of the pool: best hybrid first, peers admitted while within the cap."""
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
    out: dict[str, list] = {k: [] for k in CANDIDATE_SCHEMA}
    if anchors.height == 0:
        return pl.DataFrame(out, schema=CANDIDATE_SCHEMA)
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
        rows = eligible_rows(store, t or a_tick[js[0]], s, lo, hi)
        if rows.size == 0:
            continue
        W = stats.weights(rows)
        Q = query_matrix([queries[j] for j in js], W.shape[1], idf)
        B = np.asarray((W @ Q.T).todense())
        D = store.emb[rows] @ store.emb[arows[js]].T
        tick_rows = store.ticker[rows]
        recency = rows.astype(np.float64)
        for c, j in enumerate(js):
            ar = arows[j]
            keep = rows != ar
            if store.url_code[ar] >= 0:
                keep &= store.url_code[rows] != store.url_code[ar]
            if store.title_code[ar] >= 0:
                keep &= store.title_code[rows] != store.title_code[ar]
            if store.cluster_code[ar] >= 0:
                keep &= store.cluster_code[rows] != store.cluster_code[ar]
            idx = np.flatnonzero(keep)
            if idx.size == 0:
                continue
            b, d = B[idx, c], D[idx, c].astype(np.float64)
            peer = tick_rows[idx] != a_tick[j]
            sel = (minmax(b) + minmax(d)) / 2
            pick = idx[select_pool(sel, peer, recency[idx], cfg.m0, cfg.peer_cap)]
            pb, pd = B[pick, c], D[pick, c].astype(np.float64)
            r = (minmax(pb) + minmax(pd)) / 2
            order = np.lexsort((-recency[pick], -r))
            prow = rows[pick][order]
            out["anchor_id"].extend([a_ids[j]] * len(order))
            out["passage_id"].extend(store.passage_id[prow].tolist())
            out["rank"].extend(range(1, len(order) + 1))
            out["bm25"].extend(pb[order].tolist())
            out["dense"].extend(pd[order].tolist())
            out["relevance"].extend(r[order].tolist())
            out["is_peer"].extend((store.ticker[prow] != a_tick[j]).tolist())
            out["source_family"].extend(store.family[prow].tolist())
            out["ticker"].extend(store.ticker[prow].tolist())
    return pl.DataFrame(out, schema=CANDIDATE_SCHEMA)
