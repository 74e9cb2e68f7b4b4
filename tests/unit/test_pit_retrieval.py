"""Point-in-time of the candidate pools (docs/method.md §3): static relevance is normalised within the pool,
and passages public at or after the decision time change nothing a decision reads.

Checked by hand on a small store whose future holds extreme passages: an exact copy of the
anchor's text (the highest BM25 and cosine 1) and its opposite vector (cosine −1), on both kernels.
"""

import numpy as np
import polars as pl
import pytest

from finrag_dagster.core.retrieval.lexical import PrefixStats
from finrag_dagster.core.retrieval.pool import PoolConfig, Store, build_day_candidates

DECISION = 10_000
ANCHOR_TEXT = "acme raises revenue guidance after record quarter"
PAST = [
    "acme revenue guidance raised",
    "acme record quarter profit",
    "acme plant recall lawsuit",
    "acme dividend buyback",
    "acme ceo resigns",
    "acme cloud demand strong",
    "acme supply decline weak outlook",
    "acme antitrust probe",
]


def rows(with_future: bool):
    out = [("anc", "AAA", "IT", "news", 9_000, "ua", "ta", "anc", ANCHOR_TEXT)]
    out += [
        (f"p{i}", "AAA" if i % 3 else "BBB", "IT", "news" if i % 2 else "sec_filing", 100 + 10 * i, f"u{i}", f"t{i}", f"c{i}", t)
        for i, t in enumerate(PAST)
    ]
    if with_future:
        out += [
            ("f_copy", "AAA", "IT", "news", DECISION, "uf1", "tf1", "cf1", ANCHOR_TEXT + " again"),
            ("f_opp", "AAA", "IT", "news", DECISION + 500, "uf2", "tf2", "cf2", "acme guidance guidance guidance"),
            ("f_new", "BBB", "IT", "news", DECISION + 900, "uf3", "tf3", "cf3", "zebra unicorn words nobody used before acme"),
        ]
    return out


def store_of(rs):
    df = pl.DataFrame(rs, schema=["passage_id", "ticker", "sector", "source_family", "t", "url", "title_key", "dup_cluster", "text"], orient="row")
    rng = np.random.default_rng(5)
    emb = rng.normal(size=(df.height, 384)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    ids = df["passage_id"].to_list()
    if "f_copy" in ids:
        emb[ids.index("f_copy")] = emb[0]  # cosine 1 with the anchor
        emb[ids.index("f_opp")] = -emb[0]  # cosine -1
    df = df.with_columns(
        pl.col("t").cast(pl.Datetime("ns", "UTC")).cast(pl.Datetime("us", "UTC")).alias("public_time"),
        pl.Series("embedding", emb, dtype=pl.Array(pl.Float32, 384)),
    )
    return Store.from_evidence(df, threads=False)


ANCHOR = pl.DataFrame({"anchor_id": ["anc"], "passage_id": ["anc"], "ticker": ["AAA"], "sector": ["IT"], "headline": [ANCHOR_TEXT], "summary": [""]})


def by_hand_minmax(x):
    lo, hi = x.min(), x.max()
    return np.full(x.shape, 0.5) if hi - lo <= 0 else (x - lo) / (hi - lo)


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_relevance_is_min_max_normalised_within_the_pool_only(kernel):
    store = store_of(rows(with_future=True))
    c = build_day_candidates(store, PrefixStats(store.tm), ANCHOR, DECISION, PoolConfig(m0=6), kernel=kernel)
    assert c.height == 6 and not set(c["passage_id"]) & {"anc", "f_copy", "f_opp", "f_new"}
    b, d = c["bm25"].to_numpy(), c["dense"].to_numpy()
    want = (by_hand_minmax(b) + by_hand_minmax(d)) / 2
    np.testing.assert_allclose(c["relevance"].to_numpy(), want, rtol=0, atol=1e-12)
    assert c["rank"].to_list() == list(range(1, 7))


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_passages_at_or_after_the_decision_time_change_no_candidate(kernel):
    past_only = store_of(rows(with_future=False))
    with_future = store_of(rows(with_future=True))
    a = build_day_candidates(past_only, PrefixStats(past_only.tm), ANCHOR, DECISION, PoolConfig(m0=6), kernel=kernel)
    b = build_day_candidates(with_future, PrefixStats(with_future.tm), ANCHOR, DECISION, PoolConfig(m0=6), kernel=kernel)
    assert a.height == 6
    assert a.equals(b), "a passage public at or after decision_time changed the candidates"


# A decision at 21:00 UTC and passages one nanosecond either side of it and of the look-back's start.
NS_DECISION = 1_709_326_800_000_000_000  # 2024-03-01 21:00:00 UTC
HOUR = 3_600_000_000_000
NS_ROWS = [  # (passage_id, public ns, text)
    ("too_old", NS_DECISION - 24 * HOUR - 1, "acme revenue guidance old"),
    ("edge", NS_DECISION - 24 * HOUR, "acme revenue guidance edge"),
    ("anc", NS_DECISION - HOUR, ANCHOR_TEXT),
    ("just_before", NS_DECISION - 1, "acme record quarter before"),
    ("at", NS_DECISION, "acme revenue guidance at"),
    ("after", NS_DECISION + 1, "acme revenue guidance after"),
]


def ns_store():
    df = pl.DataFrame(
        {
            "passage_id": [r[0] for r in NS_ROWS],
            "ticker": "AAA",
            "sector": "IT",
            "source_family": "news",
            "public_time": pl.Series([r[1] for r in NS_ROWS]).cast(pl.Datetime("ns", "UTC")),
            "url": [f"u{i}" for i in range(len(NS_ROWS))],
            "title_key": [f"t{i}" for i in range(len(NS_ROWS))],
            "dup_cluster": [f"c{i}" for i in range(len(NS_ROWS))],
            "text": [r[2] for r in NS_ROWS],
        }
    )
    emb = np.random.default_rng(9).normal(size=(df.height, 384)).astype(np.float32)
    return Store.from_evidence(df.with_columns(pl.Series("embedding", emb, dtype=pl.Array(pl.Float32, 384))), threads=False)


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_visibility_is_exact_to_the_nanosecond(kernel):
    """public_time < decision_time, to the nanosecond (as floats, times 1 ns apart are equal); the
    look-back keeps public_time >= decision_time - look-back; without one the store's first row counts."""
    store = ns_store()
    assert store.prefix_end(NS_DECISION) == 4 and store.public_ns.tolist() == [r[1] for r in NS_ROWS]
    c = build_day_candidates(store, PrefixStats(store.tm), ANCHOR, NS_DECISION, PoolConfig(lookback_ns=24 * HOUR), kernel=kernel)
    assert set(c["passage_id"]) == {"edge", "just_before"}
    c = build_day_candidates(store, PrefixStats(store.tm), ANCHOR, NS_DECISION, PoolConfig(), kernel=kernel)
    assert set(c["passage_id"]) == {"too_old", "edge", "just_before"}
