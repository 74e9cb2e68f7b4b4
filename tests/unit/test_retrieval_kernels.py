"""The numba kernels of the candidate stage give the numpy reference's results to the bit:
same candidates, same order (ties included), same BM25 / cosine / relevance floats."""

import numpy as np
import polars as pl
import pytest
import scipy.sparse as sp

from finrag_dagster.core.retrieval import kernels, pool
from finrag_dagster.core.retrieval.lexical import PrefixStats, TermMatrix, bm25_tokens, query_csr, query_matrix
from finrag_dagster.core.retrieval.pool import PoolConfig, Store, build_day_candidates, minmax, select_pool

WORDS = "revenue guidance margin lawsuit merger dividend ceo recall antitrust buyback outlook record chip cloud 3.5% 1,000".split()
FLOATS = ("bm25", "dense", "relevance")


def assert_same_frames(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert a.columns == b.columns and a.height == b.height
    for c in a.columns:
        if c in FLOATS:  # bit patterns, so NaN and signed zeros count too
            assert np.array_equal(a[c].to_numpy().view(np.int64), b[c].to_numpy().view(np.int64)), c
        else:
            assert a[c].to_list() == b[c].to_list(), c


def random_store(rng, n=400, tickers=("AAA", "BBB", "CCC", "DDD", "EEE"), n_vec=None, n_texts=None):
    """A time-sorted evidence table with ties on purpose: few distinct texts (equal BM25) and
    few distinct vectors (equal cosines), shared urls/titles/clusters (removal rules)."""
    sectors = {"AAA": "IT", "BBB": "IT", "CCC": "IT", "DDD": "Unknown", "EEE": "Energy"}
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(1, 12))) for _ in range(n_texts or max(3, n // 8))]
    vecs = rng.normal(size=(n_vec or max(2, n // 10), 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    tick = rng.choice(list(tickers), size=n)
    df = pl.DataFrame(
        {
            "passage_id": [f"p{i:05d}" for i in range(n)],
            "ticker": tick,
            "sector": [sectors[t] for t in tick],
            "source_family": rng.choice(["news", "sec_filing"], size=n),
            "t": np.sort(rng.integers(0, 10_000, size=n)) * 1_000,
            "url": [f"u{rng.integers(0, n // 3)}" if rng.random() < 0.9 else "" for _ in range(n)],
            "title_key": [f"t{rng.integers(0, n // 4)}" if rng.random() < 0.9 else None for _ in range(n)],
            "dup_cluster": [f"c{rng.integers(0, n // 5)}" for _ in range(n)],
            "text": [texts[i] for i in rng.integers(0, len(texts), size=n)],
        }
    )
    emb = vecs[rng.integers(0, len(vecs), size=n)]
    df = df.with_columns(
        pl.col("t").cast(pl.Datetime("ns", "UTC")).cast(pl.Datetime("us", "UTC")).alias("public_time"),
        pl.Series("embedding", emb, dtype=pl.Array(pl.Float32, 384)),
    )
    return df


def anchors_of(store: Store, rows, seed=0, headline=None):
    rng = np.random.default_rng(seed)  # the same anchors for both kernels
    pids = store.passage_id[rows]
    return pl.DataFrame(
        {
            "anchor_id": [f"A{p}" for p in pids],
            "passage_id": list(pids),
            "ticker": list(store.ticker[rows]),
            "sector": list(store.sector[rows]),
            "headline": [headline if headline is not None else " ".join(rng.choice(WORDS, size=rng.integers(1, 6))) for _ in rows],
            "summary": ["" for _ in rows],
        }
    )


def both(store_df: pl.DataFrame, anchors_fn, decisions, cfg: PoolConfig, fallback=False):
    """Pools of every decision time from a fresh store per kernel (statistics advance in time);
    the numba run must (``fallback``) or must not hand any group to the numpy reference."""
    out = {}
    calls = []
    real = pool._group_numpy

    def counting(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    for kernel in ("numpy", "numba"):
        store = Store.from_evidence(store_df)
        stats = PrefixStats(store.tm)
        if kernel == "numba":
            pool._group_numpy = counting
        try:
            out[kernel] = [build_day_candidates(store, stats, anchors_fn(store, dec), dec, cfg, kernel=kernel) for dec in decisions]
        finally:
            pool._group_numpy = real
    assert bool(calls) == fallback
    return out["numpy"], out["numba"]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "cfg", [PoolConfig(), PoolConfig(m0=5, peer_share=0.0), PoolConfig(m0=3, peer_share=1.0), PoolConfig(m0=20, lookback_ns=3_000_000)]
)
def test_numba_pools_equal_the_numpy_reference(seed, cfg):
    rng = np.random.default_rng(seed)
    df = random_store(rng)
    decisions = [2_000_000, 5_000_000, 7_500_000, 10_000_001]

    def anchors_fn(store, dec):
        r = np.random.default_rng([seed, dec])
        visible = np.flatnonzero(store.public_ns < dec)
        rows = r.choice(visible, size=min(25, visible.size), replace=False) if visible.size else np.zeros(0, np.int64)
        return anchors_of(store, np.sort(rows), dec)

    ref, new = both(df, anchors_fn, decisions, cfg)
    assert sum(r.height for r in ref) > 0
    for a, b in zip(ref, new):
        assert_same_frames(a, b)


def test_all_equal_scores_and_no_matching_terms():
    """min == max for both scores (constant texts and vectors): every hybrid is 0.5 and the
    order is recency alone; a query with no known term has BM25 0 everywhere."""
    rng = np.random.default_rng(7)
    df = random_store(rng, n=120, n_vec=1, n_texts=1)
    for headline in ("zzz qqq", WORDS[0]):
        ref, new = both(df, lambda store, dec: anchors_of(store, np.array([5, 60, 119]), 1, headline), [10_000_001], PoolConfig())
        assert ref[0].height > 0
        assert_same_frames(ref[0], new[0])


def test_empty_eligible_sets_and_removal_rules():
    """An anchor whose whole window is removed (same cluster) or that has nothing before it."""
    rng = np.random.default_rng(3)
    df = random_store(rng, n=60, tickers=("DDD",)).with_columns(pl.lit("c0").alias("dup_cluster"))
    ref, new = both(df, lambda store, dec: anchors_of(store, np.array([0, 30])), [10_000_001], PoolConfig())
    assert ref[0].height == 0 and new[0].height == 0
    df2 = random_store(rng, n=60).with_columns(pl.lit("same").alias("url"))  # every url matches the anchor's
    ref, new = both(df2, lambda store, dec: anchors_of(store, np.array([0, 59])), [10_000_001], PoolConfig())
    assert ref[0].height == 0
    assert_same_frames(ref[0], new[0])


def test_non_finite_scores_fall_back_to_the_reference():
    rng = np.random.default_rng(11)
    df = random_store(rng, n=80)
    emb = df["embedding"].to_numpy().copy()
    emb[df["sector"].to_list().index("IT")] = np.nan  # in the anchors' IT window
    df = df.with_columns(pl.Series("embedding", emb, dtype=pl.Array(pl.Float32, 384)))
    ref, new = both(df, lambda store, dec: anchors_of(store, np.arange(20, 80, 7)), [10_000_001], PoolConfig(), fallback=True)
    assert_same_frames(ref[0], new[0])


def reference_pool(B, D, rows, tick, url, title, clus, ar, m0, peer_cap):
    """pool._group_numpy's per-anchor step on given score rows."""
    keep = rows != ar
    for codes in (url, title, clus):
        if codes[ar] >= 0:
            keep &= codes[rows] != codes[ar]
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
    b, d = B[idx], D[idx]
    recency = rows.astype(np.float64)
    sel = (minmax(b) + minmax(d)) / 2
    pick = idx[select_pool(sel, tick[rows][idx] != tick[ar], recency[idx], m0, peer_cap)]
    pb, pd = B[pick], D[pick]
    r = (minmax(pb) + minmax(pd)) / 2
    order = np.lexsort((-recency[pick], -r))
    return pick[order], pb[order], pd[order], r[order]


@pytest.mark.parametrize("seed", range(20))
def test_select_window_equals_select_pool_with_heavy_ties(seed):
    rng = np.random.default_rng(100 + seed)
    n_store = 300
    n = int(rng.integers(1, 200))
    rows = np.sort(rng.choice(n_store, size=n, replace=False)).astype(np.int64)
    tick = rng.integers(0, 3, size=n_store).astype(np.int64)
    url, title, clus = (np.where(rng.random(n_store) < 0.2, -1, rng.integers(0, 20, size=n_store)).astype(np.int64) for _ in range(3))
    na = 6
    levels = int(rng.integers(1, 5))  # few distinct values: ties everywhere, sometimes min == max
    B = (rng.integers(0, levels, size=(na, n)) * 0.37).astype(np.float64)
    D = (rng.integers(0, levels, size=(na, n)) * 0.25 - 0.5).astype(np.float32)
    a_rows = rng.integers(0, n_store, size=na).astype(np.int64)
    a_rows[0] = rows[0]  # an anchor inside its own window
    for m0, peer_cap in ((20, 4), (5, 0), (3, 3), (1, 1), (50, 10)):
        pos, cnt, pb, pd, rel, status = kernels.select_window(B, D, rows, tick, url, title, clus, a_rows, m0, peer_cap)
        assert not status.any()
        for c in range(na):
            pick, rb, rd, rr = reference_pool(B[c], D[c].astype(np.float64), rows, tick, url, title, clus, a_rows[c], m0, peer_cap)
            k = cnt[c]
            assert k == len(pick)
            assert pos[c, :k].tolist() == pick.tolist()
            for x, y in ((pb[c, :k], rb), (pd[c, :k], rd), (rel[c, :k], rr)):
                assert np.array_equal(x.view(np.int64), np.asarray(y, dtype=np.float64).view(np.int64))


@pytest.mark.parametrize("seed", range(5))
def test_bm25_window_equals_the_sparse_product(seed):
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(0, 30))) for _ in range(500)]
    tm = TermMatrix.from_texts(texts)
    stats = PrefixStats(tm)
    stats.advance(450)
    rows = np.sort(rng.choice(500, size=300, replace=False))
    X = tm.X[rows]
    Xc = X.tocsc()
    Xc.sort_indices()
    queries = [tm.vocab.lookup(bm25_tokens(" ".join(rng.choice(WORDS, size=rng.integers(0, 8))))) for _ in range(12)] + [[]]
    idf = stats.idf()
    a, b = 40, 260
    W = stats.weights(rows[a:b], X[a:b], tm.doc_len[rows[a:b]])
    ref = (query_matrix(queries, W.shape[1], idf) @ W.T).toarray()
    q_ptr, q_terms, q_vals = query_csr(queries, idf)
    got = kernels.bm25_window(
        Xc.indptr.astype(np.int64),
        Xc.indices.astype(np.int32),
        Xc.data.astype(np.int32),
        tm.doc_len[rows].astype(np.int64),
        a,
        b,
        q_ptr,
        q_terms,
        q_vals,
        np.arange(len(queries), dtype=np.int64),
        stats.k1,
        stats.b,
        stats.avgdl,
    )
    assert np.array_equal(got.view(np.int64), ref.view(np.int64))


def test_query_csr_equals_query_matrix():
    rng = np.random.default_rng(0)
    idf = rng.normal(size=40)
    queries = [list(rng.integers(0, 45, size=rng.integers(0, 10))) for _ in range(100)] + [[]]
    m = query_matrix(queries, 45, idf)
    indptr, indices, data = query_csr(queries, idf)
    assert indptr.tolist() == m.indptr.tolist() and indices.tolist() == m.indices.tolist()
    assert np.array_equal(data.view(np.int64), m.data.view(np.int64))
    assert [len(x) for x in query_csr([], idf)] == [1, 0, 0]


TRICKY = list("abcXYZ0129.,%% -_é'É\n") + ["the", "and", " of ", "1,000", "3.5%", "..", ",,", "ß", "Straße", "x1.5%y", "5.", ".5"]


def assert_same_term_matrix(texts):
    a = TermMatrix.from_texts(texts)
    b = TermMatrix.build([bm25_tokens(t.lower() if t else t) for t in texts])
    assert a.vocab.ids == b.vocab.ids
    assert a.X.shape == b.X.shape
    for x, y in ((a.X.indptr, b.X.indptr), (a.X.indices, b.X.indices), (a.X.data, b.X.data), (a.doc_len, b.doc_len)):
        assert np.array_equal(x, y)


def test_tokenizer_kernel_equals_the_regex_tokenizer():
    rng = np.random.default_rng(5)
    assert_same_term_matrix([])
    assert_same_term_matrix(["", None, "the and of"])
    for _ in range(100):
        texts = [None if rng.random() < 0.05 else "".join(rng.choice(TRICKY, size=rng.integers(0, 40))) for _ in range(rng.integers(1, 20))]
        assert_same_term_matrix(texts)


def test_tokenizer_grows_its_tables():
    """More distinct terms than the initial table (32k keys) and arena (1 MiB) hold."""
    rng = np.random.default_rng(1)
    alphabet = list("abcdefghijklmnopqrstuvwxyz0123456789")
    words = ["".join(rng.choice(alphabet, size=rng.integers(1, 16))) for _ in range(90_000)]
    texts = [" ".join(words[i : i + 3000]) for i in range(0, 90_000, 3000)] + [" ".join(words[:80_000]) + " the"]
    assert_same_term_matrix(texts)
    assert len(TermMatrix.from_texts(texts).vocab) > 40_000


def test_warm_up_reports_seconds():
    assert kernels.warm_up() >= 0.0


def test_unknown_kernel_is_an_error():
    rng = np.random.default_rng(0)
    store = Store.from_evidence(random_store(rng, n=20))
    with pytest.raises(ValueError, match="kernel"):
        build_day_candidates(store, PrefixStats(store.tm), anchors_of(store, np.array([3])), 10**9, PoolConfig(), kernel="cuda")


def test_store_codes_keep_equality_and_mark_missing():
    df = pl.DataFrame({"url": ["a", "", None, "a", "b"]})
    from finrag_dagster.core.retrieval.pool import _codes

    c = _codes(df["url"])
    assert c[1] == c[2] == -1 and c[0] == c[3] >= 0 and c[4] >= 0 and c[4] != c[0]
    assert sp.issparse(TermMatrix.from_texts(["a b"]).X)


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_threaded_days_equal_sequential_days(kernel):
    """All days submitted to a thread pool before any is collected (the statistics advance while
    earlier days still score against their frozen view) give the sequential frames to the bit."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(11)
    df = random_store(rng, n=900)
    decisions = [1_000_000 * k + 1 for k in range(1, 11)]

    def anchors_for(store, dec):
        r = np.random.default_rng([11, dec])
        visible = np.flatnonzero(store.public_ns < dec)
        return anchors_of(store, np.sort(r.choice(visible, size=min(30, visible.size), replace=False)), dec)

    store = Store.from_evidence(df)
    stats = PrefixStats(store.tm)
    seq = [build_day_candidates(store, stats, anchors_for(store, d), d, PoolConfig(lookback_ns=4_000_000), kernel=kernel) for d in decisions]
    store = Store.from_evidence(df)
    stats = PrefixStats(store.tm)
    with pool.one_blas_thread(), ThreadPoolExecutor(3) as ex:
        pending = [
            pool.start_day_candidates(store, stats, anchors_for(store, d), d, PoolConfig(lookback_ns=4_000_000), kernel=kernel, executor=ex)
            for d in decisions
        ]
        par = [p.frame() for p in pending]
    assert sum(f.height for f in seq) > 100
    for a, b in zip(seq, par):
        assert_same_frames(a, b)
