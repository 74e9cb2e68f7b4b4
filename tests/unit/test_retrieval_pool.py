"""Candidate pools: BM25 parity with rank_bm25, filter-first, removal rules, the 20% peer cap, and
second implementations (plain Python, rank_bm25, by hand) of the selection, ranking, grouping and store."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl
import pytest
from rank_bm25 import BM25Okapi

from finrag_dagster.core.retrieval.lexical import PrefixStats, TermMatrix, bm25_scores, bm25_tokens
from finrag_dagster.core.retrieval.pool import (
    CANDIDATE_SCHEMA,
    KERNELS,
    PoolConfig,
    Store,
    build_day_candidates,
    eligible_rows,
    minmax,
    one_blas_thread,
    select_pool,
    start_day_candidates,
)

WORDS = (
    "revenue guidance margin lawsuit merger dividend ceo resigns quarter profit loss plant recall antitrust "
    "buyback outlook strong weak record decline growth chip cloud supply demand"
).split()


def random_texts(n, seed=0):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(3, 25))) for _ in range(n)]


def test_bm25_scores_equal_rank_bm25_on_the_visible_prefix():
    texts = random_texts(400)
    toks = [bm25_tokens(t) for t in texts]
    tm = TermMatrix.build(toks)
    stats = PrefixStats(tm)
    n_visible = 300
    stats.advance(n_visible)
    ref = BM25Okapi(toks[:n_visible])  # the corpus public before the decision time
    rows = np.arange(n_visible)
    for q_text in ["revenue guidance strong quarter", "lawsuit antitrust recall recall", "zzz unknown words", "merger"]:
        q = bm25_tokens(q_text)
        ours = bm25_scores(stats, rows, [tm.vocab.lookup(q)])[:, 0]
        np.testing.assert_allclose(ours, ref.get_scores(q), rtol=1e-12, atol=1e-12)


def test_terms_only_in_later_documents_have_no_weight():
    toks = [["alpha", "beta"], ["beta", "gamma"], ["alpha"], ["future", "alpha"]]
    tm = TermMatrix.build(toks)
    stats = PrefixStats(tm)
    stats.advance(3)
    assert stats.idf()[tm.vocab.ids["future"]] == 0.0
    before = bm25_scores(stats, np.arange(3), [tm.vocab.lookup(["alpha", "future"])])
    ref = BM25Okapi(toks[:3]).get_scores(["alpha", "future"])
    np.testing.assert_allclose(before[:, 0], ref, rtol=1e-12)


def test_minmax_and_selection_cap():
    assert minmax(np.array([2.0, 2.0])).tolist() == [0.5, 0.5]
    assert minmax(np.array([1.0, 3.0, 2.0])).tolist() == [0.0, 1.0, 0.5]
    sel = np.linspace(1, 0, 30)
    peer = np.array([True] * 10 + [False] * 20)  # the 10 best are all peers
    pick = select_pool(sel, peer, np.zeros(30), m0=20, peer_cap=4)
    assert len(pick) == 20 and peer[pick].sum() == 4
    assert list(pick[:4]) == [0, 1, 2, 3]


def _store(rows, emb=None):
    """rows: (pid, ticker, sector, family, t_ns, url, title_key, cluster, text); emb: their embeddings (default random unit vectors)"""
    df = pl.DataFrame(rows, schema=["passage_id", "ticker", "sector", "source_family", "t", "url", "title_key", "dup_cluster", "text"], orient="row")
    if emb is None:
        rng = np.random.default_rng(1)
        emb = rng.normal(size=(df.height, 384)).astype(np.float32)
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    df = df.with_columns(
        pl.col("t").cast(pl.Datetime("ns", "UTC")).cast(pl.Datetime("us", "UTC")).alias("public_time"),
        pl.Series("embedding", emb, dtype=pl.Array(pl.Float32, 384)),
    )
    return Store.from_evidence(df)


def _anchor(pid, ticker="AAA", sector="IT", headline="acme revenue guidance", summary=""):
    return pl.DataFrame(
        {"anchor_id": [pid], "passage_id": [pid], "ticker": [ticker], "sector": [sector], "headline": [headline], "summary": [summary]}
    )


def test_filter_first_and_every_removal_rule():
    rows = [
        ("a0", "AAA", "IT", "news", 100, "u0", "t0", "a0", "acme revenue guidance raised"),  # the anchor itself
        ("same_url", "AAA", "IT", "news", 50, "u0", "tx", "c1", "acme revenue guidance copy"),
        ("same_title", "AAA", "IT", "news", 60, "u2", "t0", "c2", "acme revenue guidance title"),
        ("same_cluster", "AAA", "IT", "news", 70, "u3", "t3", "a0", "acme revenue guidance cluster"),
        ("keep1", "AAA", "IT", "sec_filing", 80, "u4", "t4", "c4", "acme revenue guidance filing"),
        ("keep2", "AAA", "IT", "news", 90, "u5", "t5", "c5", "acme plant recall"),
        ("other_sector", "ZZZ", "Energy", "news", 90, "u6", "t6", "c6", "acme revenue guidance oil"),
        ("at_decision", "AAA", "IT", "news", 1000, "u7", "t7", "c7", "acme revenue guidance late"),
        ("future", "AAA", "IT", "news", 2000, "u8", "t8", "c8", "acme revenue guidance leaked"),
    ]
    store = _store(rows)
    # a0 sits in the cluster rooted at itself; "same_cluster" was assigned to the anchor's cluster
    store.cluster_code[store.row_of["a0"]] = store.cluster_code[store.row_of["same_cluster"]]
    stats = PrefixStats(store.tm)
    cands = build_day_candidates(store, stats, _anchor("a0"), decision_ns=1000, cfg=PoolConfig())
    assert sorted(cands["passage_id"].to_list()) == ["keep1", "keep2"]
    assert cands["rank"].to_list() == [1, 2]
    assert cands.filter(pl.col("passage_id") == "keep1")["relevance"][0] == 1.0


def test_peers_are_at_most_a_fifth_of_the_pool_and_flagged():
    rows = [("anc", "AAA", "IT", "news", 10_000, "ua", "ta", "anc", "nvidia gpu datacenter")]
    filler = random_texts(30, seed=3)
    for i in range(30):
        rows.append((f"own{i:02d}", "AAA", "IT", "news", 100 + i, f"uo{i}", f"to{i}", f"co{i}", "acme " + filler[i]))
    for i in range(10):
        rows.append((f"peer{i:02d}", "BBB", "IT", "news", 100 + i, f"up{i}", f"tp{i}", f"cp{i}", "nvidia gpu datacenter"))
    store = _store(rows)
    cands = build_day_candidates(store, PrefixStats(store.tm), _anchor("anc", headline="nvidia gpu datacenter"), 20_000, PoolConfig())
    assert cands.height == 20
    assert cands["is_peer"].sum() == 4  # all 10 peers outscore the company on BM25 but are capped
    assert cands.filter(pl.col("is_peer"))["bm25"].min() > cands.filter(~pl.col("is_peer"))["bm25"].max()
    assert set(cands.filter(pl.col("is_peer"))["ticker"]) == {"BBB"}


def test_unknown_sector_has_no_peers_and_lookback_limits_history():
    rows = [("anc", "AAA", "Unknown", "news", 10_000, "ua", "ta", "anc", "acme")]
    rows += [
        ("old", "AAA", "Unknown", "news", 10, "u1", "t1", "c1", "acme old"),
        ("new", "AAA", "Unknown", "news", 9_000, "u2", "t2", "c2", "acme new"),
        ("peer", "BBB", "Unknown", "news", 9_000, "u3", "t3", "c3", "acme peer"),
    ]
    store = _store(rows)
    c = build_day_candidates(store, PrefixStats(store.tm), _anchor("anc", sector="Unknown", headline="acme"), 20_000, PoolConfig(lookback_ns=15_000))
    assert c["passage_id"].to_list() == ["new"]


def test_missing_anchor_passage_is_an_error():
    store = _store([("p", "AAA", "IT", "news", 1, "u", "t", "p", "text")])
    with pytest.raises(KeyError, match="not in the evidence store"):
        build_day_candidates(store, PrefixStats(store.tm), _anchor("nope"), 10, PoolConfig())


# --- second implementations, by hand or in plain Python, of what decides a pool ---


def plain_minmax(xs):
    lo, hi = min(xs), max(xs)
    return [0.5] * len(xs) if hi - lo <= 0 else [(x - lo) / (hi - lo) for x in xs]


def plain_select(sel, peer, recency, m0, cap):
    """Best hybrid first (newer first on a tie); a peer is admitted while at most ``cap`` peers were met."""
    out, met = [], 0
    for i in sorted(range(len(sel)), key=lambda i: (-sel[i], -recency[i])):
        met += bool(peer[i])
        if peer[i] and met > cap:
            continue
        out.append(i)
        if len(out) == m0:
            break
    return out


def test_minmax_of_one_value_or_none():
    assert minmax(np.array([3.0])).tolist() == [0.5]
    e = minmax(np.zeros(0, dtype=np.int64))
    assert e.size == 0 and e.dtype == np.float64


@pytest.mark.parametrize("seed", range(5))
def test_select_pool_equals_a_plain_sort_beyond_three_m0(seed):
    """More than 3*M0 scores (the partial sort), ties at the cut, and peers crowding the best 3*M0 out."""
    rng = np.random.default_rng(seed)
    m0 = int(rng.integers(1, 6))
    cap = int(rng.integers(0, m0 + 1))
    for n in (3 * m0 + 1, 3 * m0 + 7, 12 * m0):
        sel = np.round(rng.random(n), 1)  # many ties, at the cut too
        recency = rng.permutation(n).astype(np.float64)
        peer = rng.random(n) < 0.5
        assert select_pool(sel, peer, recency, m0, cap).tolist() == plain_select(sel, peer, recency, m0, cap)
    n = 10 * m0
    sel = np.round(np.linspace(1, 0, n), 1)  # ties among the company's passages too
    peer = np.arange(n) < 3 * m0 + 2  # the best 3*M0 + 2 are peers: the company's passages come after them
    recency = rng.permutation(n).astype(np.float64)
    got = select_pool(sel, peer, recency, m0, cap).tolist()
    assert got == plain_select(sel, peer, recency, m0, cap) and len(got) == m0


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_removal_rules_when_the_anchor_is_the_stores_first_row(kernel):
    """The anchor is row 0, so its url, title and cluster hold the first code of each column."""
    rows = [
        ("a0", "AAA", "IT", "news", 10_000, "ua", "ta", "ca", "acme revenue guidance raised"),
        ("same_url", "AAA", "IT", "news", 20_000, "ua", "t1", "c1", "acme revenue guidance copy"),
        ("same_title", "AAA", "IT", "news", 30_000, "u2", "ta", "c2", "acme revenue guidance title"),
        ("same_cluster", "AAA", "IT", "news", 40_000, "u3", "t3", "ca", "acme revenue guidance cluster"),
        ("keep1", "AAA", "IT", "sec_filing", 50_000, "u4", "t4", "c4", "acme revenue guidance filing"),
        ("keep2", "AAA", "IT", "news", 60_000, "u5", "t5", "c5", "acme plant recall"),
    ]
    store = _store(rows)
    c = build_day_candidates(store, PrefixStats(store.tm), _anchor("a0"), 1_000_000, PoolConfig(), kernel=kernel)
    assert c.schema == pl.Schema(CANDIDATE_SCHEMA)
    assert c["passage_id"].to_list() == ["keep1", "keep2"] and c["anchor_id"].to_list() == ["a0", "a0"]
    assert c["source_family"].to_list() == ["sec_filing", "news"] and c["is_peer"].to_list() == [False, False]


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_empty_and_missing_keys_match_nothing(kernel):
    """An anchor without url, title or cluster removes nobody: empty and missing values are no key."""
    rows = [
        ("a0", "AAA", "IT", "news", 10_000, "", None, "", "acme revenue guidance"),
        ("blank", "AAA", "IT", "news", 20_000, "", None, None, "acme revenue"),
        ("first_code", "AAA", "IT", "news", 30_000, "x", "y", "z", "acme guidance"),  # the first non-empty value of each column
    ]
    store = _store(rows)
    c = build_day_candidates(store, PrefixStats(store.tm), _anchor("a0"), 1_000_000, PoolConfig(), kernel=kernel)
    assert sorted(c["passage_id"].to_list()) == ["blank", "first_code"]


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_an_anchor_with_no_candidate_leaves_the_next_anchors_pool(kernel):
    """A shares its title with B and its url with p: A's pool is empty, B's holds p alone
    (both scores min-max to 0.5 in a pool of one)."""
    rows = [
        ("A", "AAA", "IT", "news", 10_000, "uA", "tA", "cA", "acme revenue guidance"),
        ("B", "AAA", "IT", "news", 20_000, "uB", "tA", "cB", "acme revenue outlook"),
        ("p", "BBB", "IT", "news", 30_000, "uA", "tp", "cp", "acme revenue plant"),
    ]
    store = _store(rows)
    anchors = pl.concat([_anchor("A"), _anchor("B")])
    c = build_day_candidates(store, PrefixStats(store.tm), anchors, 1_000_000, PoolConfig(), kernel=kernel)
    assert c["anchor_id"].to_list() == ["B"] and c["passage_id"].to_list() == ["p"]
    assert c["rank"].to_list() == [1] and c["relevance"].to_list() == [0.5] and c["is_peer"].to_list() == [True]
    want = float(np.dot(store.emb[1].astype(np.float64), store.emb[2].astype(np.float64)))
    assert c["dense"][0] == pytest.approx(want, rel=1e-5)


GROUP_ROWS = [
    ("x", "AAA", "IT", "news", 500_000, "ux", "tx", "cx", "acme revenue"),
    ("y", "BBB", "IT", "news", 510_000, "uy", "ty", "cy", "acme revenue"),
    ("z", "AAA", "IT", "news", 520_000, "uz", "tz", "cz", "acme guidance"),
    ("it1", "CCC", "IT", "news", 100_000, "u1", "t1", "c1", "acme revenue guidance"),
    ("a", "AAA", "Unknown", "news", 600_000, "ua", "ta", "ca", "acme revenue"),
    ("b", "BBB", "Unknown", "news", 610_000, "ub", "tb", "cb", "acme revenue"),
    ("a1", "AAA", "Unknown", "news", 110_000, "ua1", "ta1", "ca1", "acme revenue old"),
    ("a2", "AAA", "Unknown", "news", 120_000, "ua2", "ta2", "ca2", "acme guidance"),
    ("b1", "BBB", "Unknown", "news", 130_000, "ub1", "tb1", "cb1", "acme revenue"),
    ("e", "", "", "news", 700_000, "ue", "te", "ce", "acme revenue"),
    ("e1", "", "", "news", 140_000, "ue1", "te1", "ce1", "acme revenue"),
    ("late", "AAA", "Unknown", "news", 5_000_000, "ul", "tl", "cl", "acme revenue"),
]
GROUP_ANCHORS = pl.DataFrame(
    {
        "anchor_id": ["x", "y", "z", "a", "b", "e"],
        "passage_id": ["x", "y", "z", "a", "b", "e"],
        "ticker": ["AAA", "BBB", "AAA", "AAA", "BBB", ""],
        "sector": ["IT", "IT", "IT", "Unknown", "Unknown", ""],
        "headline": ["acme revenue"] * 6,
        "summary": [""] * 6,
    }
)
# each anchor's pool by hand: its sector's passages before the decision but itself (peers in IT), only its own
# ticker's (of any sector) in a no-peer sector; the anchors of IT share one group and keep their order
GROUP_POOLS = {"x": {"y", "z", "it1"}, "y": {"x", "z", "it1"}, "z": {"x", "y", "it1"}, "a": {"a1", "a2", "x", "z"}, "b": {"b1", "y"}, "e": {"e1"}}


def _pools(c):
    ids = c["anchor_id"].to_list()
    order = [a for i, a in enumerate(ids) if i == 0 or ids[i - 1] != a]
    return order, {a: set(c.filter(pl.col("anchor_id") == a)["passage_id"]) for a in order}


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_anchors_of_a_day_are_grouped_by_sector_or_by_ticker(kernel):
    store = _store(GROUP_ROWS)
    c = build_day_candidates(store, PrefixStats(store.tm), GROUP_ANCHORS, 1_000_000, PoolConfig(), kernel=kernel)
    order, pools = _pools(c)
    assert order == ["x", "y", "z", "a", "b", "e"] and pools == GROUP_POOLS
    assert c.filter(pl.col("is_peer"))["anchor_id"].to_list() == ["x", "x", "y", "y", "y", "z", "z"]


@pytest.mark.parametrize("kernel", [None, "numba", "numpy"])
def test_groups_run_on_an_executor(kernel):
    """start_day_candidates on a thread pool (None: the default kernel) gives the same pools."""
    store = _store(GROUP_ROWS)
    kw = {} if kernel is None else {"kernel": kernel}
    with one_blas_thread(), ThreadPoolExecutor(2) as ex:
        day = start_day_candidates(store, PrefixStats(store.tm), GROUP_ANCHORS, 1_000_000, PoolConfig(), executor=ex, **kw)
        c = day.frame()
    order, pools = _pools(c)
    assert order == ["x", "y", "z", "a", "b", "e"] and pools == GROUP_POOLS
    assert c.schema == pl.Schema(CANDIDATE_SCHEMA)


def test_no_anchor_or_an_empty_window_no_candidate_and_unknown_kernel():
    store = _store(GROUP_ROWS)
    none = GROUP_ANCHORS.clear()
    for kernel in KERNELS:
        c = build_day_candidates(store, PrefixStats(store.tm), none, 1_000_000, PoolConfig(), kernel=kernel)
        assert c.height == 0 and c.schema == pl.Schema(CANDIDATE_SCHEMA)
        c = build_day_candidates(store, PrefixStats(store.tm), GROUP_ANCHORS, 1_000_000, PoolConfig(lookback_ns=1), kernel=kernel)
        assert c.height == 0  # a look-back of 1 ns: every group's window is empty
    assert start_day_candidates(store, PrefixStats(store.tm), none, 1_000_000, PoolConfig()).frame().schema == pl.Schema(CANDIDATE_SCHEMA)
    with pytest.raises(ValueError, match="kernel must be one of"):
        build_day_candidates(store, PrefixStats(store.tm), GROUP_ANCHORS, 1_000_000, PoolConfig(), kernel="cuda")


def test_one_blas_thread_limits_blas_to_one_thread():
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas():
        return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}

    with threadpool_limits(limits=2, user_api="blas"):
        assert blas() == {2}
        with one_blas_thread():
            assert blas() == {1}


def test_an_anchor_with_a_non_finite_embedding_goes_to_the_reference():
    """NaN cosines: the kernels hand the anchor to the numpy reference, which pools the newest passages."""
    rows = [("anc", "AAA", "IT", "news", 900_000, "ua", "ta", "ca", "acme revenue")]
    rows += [(f"p{i}", "AAA", "IT", "news", (100 + i) * 1000, f"u{i}", f"t{i}", f"c{i}", "acme revenue guidance") for i in range(5)]
    emb = np.random.default_rng(2).normal(size=(6, 384)).astype(np.float32)
    emb[0] = np.nan
    store = _store(rows, emb)
    for kernel in KERNELS:
        c = build_day_candidates(store, PrefixStats(store.tm), _anchor("anc"), 1_000_000, PoolConfig(m0=3), kernel=kernel)
        assert c["passage_id"].to_list() == ["p4", "p3", "p2"] and c["dense"].is_nan().all() and c["relevance"].is_nan().all()


def test_empty_store():
    df = pl.DataFrame(
        schema={
            "passage_id": pl.Utf8,
            "ticker": pl.Utf8,
            "sector": pl.Utf8,
            "source_family": pl.Utf8,
            "public_time": pl.Datetime("ns", "UTC"),
            "url": pl.Utf8,
            "title_key": pl.Utf8,
            "dup_cluster": pl.Utf8,
            "text": pl.Utf8,
            "embedding": pl.Array(pl.Float32, 384),
        }
    )
    store = Store.from_evidence(df)
    assert len(store) == 0 and store.emb.shape == (0, 384) and store.emb.dtype == np.float32 and store.prefix_end(10**18) == 0
    c = build_day_candidates(store, PrefixStats(store.tm), GROUP_ANCHORS.clear(), 10**18, PoolConfig())
    assert c.height == 0


def test_store_columns_in_public_time_order():
    rows = [
        ("p2", "BBB", "IT", "news", 300_000, "u", "t", "c", "b"),
        ("p1", "AAA", "Unknown", "sec_filing", 100_000, "u", "t", "c", "a"),
        ("p0", "AAA", "IT", "news", 300_000, "u", "t", "c", "c"),
    ]
    store = _store(rows)
    assert store.passage_id.tolist() == ["p1", "p0", "p2"] and store.public_ns.tolist() == [100_000, 300_000, 300_000]
    assert store.sector.tolist() == ["Unknown", "IT", "IT"] and store.ticker.tolist() == ["AAA", "AAA", "BBB"]
    assert store.family.tolist() == ["sec_filing", "news", "news"] and store.row_of == {"p1": 0, "p0": 1, "p2": 2}
    assert {k: v.tolist() for k, v in store.sector_rows.items()} == {"Unknown": [0], "IT": [1, 2]}
    assert {k: v.tolist() for k, v in store.ticker_rows.items()} == {"AAA": [0, 1], "BBB": [2]}
    assert store.columns()["passage_id"].to_list() == ["p1", "p0", "p2"]


def test_eligible_rows_of_a_company_and_its_sector():
    store = _store(GROUP_ROWS)
    sect, tick = [r[2] for r in sorted(GROUP_ROWS, key=lambda r: (r[4], r[0]))], [r[1] for r in sorted(GROUP_ROWS, key=lambda r: (r[4], r[0]))]
    for lo, hi in ((0, len(sect)), (2, 9), (3, 3), (5, 12)):
        assert eligible_rows(store, "AAA", "IT", lo, hi).tolist() == [i for i in range(lo, hi) if sect[i] == "IT"]
        assert eligible_rows(store, "AAA", "Unknown", lo, hi).tolist() == [i for i in range(lo, hi) if tick[i] == "AAA"]
    assert eligible_rows(store, "AAA", "Energy", 0, 12).tolist() == [] and eligible_rows(store, "ZZZ", "ETF", 0, 12).dtype == np.int64


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_pool_and_ranks_equal_a_by_hand_hybrid(kernel):
    """BM25 of the corpus public before the decision (rank_bm25), cosine, min-max over the eligible
    passages, the best M0 = 6 with one peer at most, ranked by relevance within the pool, newer first on a tie."""
    texts = random_texts(14, seed=7)
    rows = [(f"p{i:02d}", "BBB" if i % 4 == 0 else "AAA", "IT", "news", (10 + i) * 1000, f"u{i}", f"t{i}", f"c{i}", texts[i]) for i in range(14)]
    twin = "revenue guidance quarter profit revenue"
    rows += [("twin_old", "AAA", "IT", "news", 30_000, "uo", "to", "co", twin), ("twin_new", "AAA", "IT", "news", 31_000, "un", "tn", "cn", twin)]
    rows += [
        ("oil", "ZZZ", "Energy", "news", 32_000, "uz", "tz", "cz", "revenue revenue oil"),
        ("late", "AAA", "IT", "news", 99_000, "ul", "tl", "cl", twin),
    ]
    rows += [("anc", "AAA", "IT", "news", 40_000, "ua", "ta", "ca", "acme")]
    emb = np.random.default_rng(3).normal(size=(len(rows), 384)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    emb[14] = emb[15] = emb[-1]  # the twins: cosine 1 with the anchor, the same text: a tie at relevance 1
    store = _store(rows, emb)
    anchor = _anchor("anc", headline="revenue guidance", summary="quarter profit")
    c = build_day_candidates(store, PrefixStats(store.tm), anchor, 50_000, PoolConfig(m0=6), kernel=kernel)

    by_time = sorted(range(len(rows)), key=lambda i: (rows[i][4], rows[i][0]))  # the store's rows
    visible = [i for i in by_time if rows[i][4] < 50_000]
    scores = BM25Okapi([bm25_tokens(rows[i][8]) for i in visible]).get_scores(bm25_tokens("revenue guidance quarter profit"))
    e = [k for k, i in enumerate(visible) if rows[i][2] == "IT" and rows[i][0] != "anc"]
    b = [scores[k] for k in e]
    d = [float(np.dot(emb[-1].astype(np.float64), emb[visible[k]].astype(np.float64))) for k in e]
    sel = [(x + y) / 2 for x, y in zip(plain_minmax(b), plain_minmax(d))]
    peer = [rows[visible[k]][1] != "AAA" for k in e]
    pick = plain_select(sel, peer, e, 6, 1)  # recency: the store row
    r = [(x + y) / 2 for x, y in zip(plain_minmax([b[p] for p in pick]), plain_minmax([d[p] for p in pick]))]
    ranked = sorted(range(len(pick)), key=lambda j: (-r[j], -e[pick[j]]))

    assert c["passage_id"].to_list() == [rows[visible[e[pick[j]]]][0] for j in ranked]
    assert c["passage_id"].to_list()[:2] == ["twin_new", "twin_old"] and c["relevance"].to_list()[:2] == [1.0, 1.0]
    assert c["rank"].to_list() == list(range(1, 7)) and c["anchor_id"].to_list() == ["anc"] * 6
    np.testing.assert_allclose(c["bm25"].to_numpy(), [b[pick[j]] for j in ranked], rtol=1e-9)
    np.testing.assert_allclose(c["dense"].to_numpy(), [d[pick[j]] for j in ranked], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c["relevance"].to_numpy(), [r[j] for j in ranked], rtol=0, atol=1e-6)
    assert c["is_peer"].to_list() == [peer[pick[j]] for j in ranked] and sum(c["is_peer"]) <= 1


@pytest.mark.parametrize("kernel", KERNELS)
def test_two_passages_one_unit_apart_in_the_hybrid_score_are_not_a_tie(kernel):
    """(min-max BM25 + min-max cosine) / 2 is exact, so sums one unit in the last place apart stay
    apart: B (cosine 2**-53) ranks above A (cosine 0, same text, newer), which a tie would put first.
    Dividing by any number but a power of two could round both to one float and hand A the place."""
    rows = [
        ("anc", "AAA", "IT", "news", 900_000, "ua", "ta", "ca", "acme revenue"),
        ("B", "AAA", "IT", "news", 100_000, "ub", "tb", "cb", "acme revenue guidance"),
        ("A", "AAA", "IT", "news", 200_000, "uA", "tA", "cA", "acme revenue guidance"),
        ("H", "AAA", "IT", "news", 300_000, "uh", "th", "ch", "acme revenue acme acme acme acme"),
        ("L", "AAA", "IT", "news", 400_000, "ul", "tl", "cl", "plant recall"),
    ]
    emb = np.zeros((5, 384), np.float32)
    emb[:, 1] = 1.0
    emb[0] = 0.0
    emb[0, 0] = 1.0  # the anchor: e0, so each passage's cosine is its first coordinate over its norm
    emb[1, 0], emb[3, 0] = 2.0**-53, 1.0  # B just above A's 0; H the closest
    store = _store(rows, emb)
    c = build_day_candidates(store, PrefixStats(store.tm), _anchor("anc", headline="acme revenue"), 1_000_000, PoolConfig(m0=2), kernel=kernel)
    assert c["passage_id"].to_list() == ["H", "B"]
