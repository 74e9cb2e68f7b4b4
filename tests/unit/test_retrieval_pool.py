"""Candidate pools: BM25 parity with rank_bm25, filter-first, removal rules, the 20% peer cap."""

import numpy as np
import polars as pl
import pytest
from rank_bm25 import BM25Okapi

from finrag_dagster.core.retrieval.lexical import PrefixStats, TermMatrix, bm25_scores, bm25_tokens
from finrag_dagster.core.retrieval.pool import PoolConfig, Store, build_day_candidates, minmax, select_pool

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


def _store(rows):
    """rows: (pid, ticker, sector, family, t_ns, url, title_key, cluster, text)"""
    df = pl.DataFrame(rows, schema=["passage_id", "ticker", "sector", "source_family", "t", "url", "title_key", "dup_cluster", "text"], orient="row")
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
