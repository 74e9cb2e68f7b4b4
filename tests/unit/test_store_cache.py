"""The candidate stage's saved evidence store: extended day by day it is the store built from the
whole evidence table at once (same rows, codes, vectors, term ids and counts), so pools are the
same bytes; a run with nothing new reads no evidence; a re-materialised day rebuilds it; a crash
leaves the previous store."""

import math

import numpy as np
import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.retrieval import store_cache
from finrag_dagster.core.retrieval.candidates import candidates_for_days
from finrag_dagster.core.retrieval.pool import Store
from finrag_dagster.core.retrieval.store_cache import load_store
from finrag_dagster.core.settings import RetrievalSettings
from finrag_dagster.core.tables import Lake

WORDS = "revenue guidance margin lawsuit merger dividend ceo recall antitrust buyback outlook record chip cloud 3.5% 1,000".split()
FLOATS = ("bm25", "dense", "relevance")


def assert_same_frames(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert a.columns == b.columns and a.height == b.height
    for c in a.columns:
        if c in FLOATS:  # bit patterns
            assert np.array_equal(a[c].to_numpy().view(np.int64), b[c].to_numpy().view(np.int64)), c
        else:
            assert a[c].to_list() == b[c].to_list(), c


CAL = nyse()
DAYS = [d.isoformat() for d in CAL.sessions_in_range(CAL.sessions_in_range("2019-01-02", "2019-01-02")[0], "2019-01-31")]
SECTORS = {"AAA": "IT", "BBB": "IT", "CCC": "IT", "DDD": "Unknown", "EEE": "Energy"}


def day_evidence(day: str, rng, n: int, tag: str = "") -> pl.DataFrame:
    """Rows public in (close(D-1), close(D)], with ties on time and text on purpose, and words
    that first occur on later days (new vocabulary terms while the store grows)."""
    i = CAL.session_index(day)
    lo, hi = int(CAL.closes_ns[i - 1]), int(CAL.closes_ns[i])
    t = np.sort(hi - rng.integers(0, (hi - lo) // 10**9, size=n) * 10**9)
    words = WORDS + [f"w{day[-2:]}{k}" for k in range(3)]
    tick = rng.choice(list(SECTORS), size=n)
    vecs = rng.normal(size=(n, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return pl.DataFrame(
        {
            "passage_id": [f"{day}-{tag}{k:03d}" for k in range(n)],
            "source_family": rng.choice(["news", "sec_filing"], size=n),
            "doc_id": [f"d{k}" for k in range(n)],
            "ticker": tick,
            "sector": [SECTORS[x] for x in tick],
            "public_time": pl.Series(t).cast(pl.Datetime("ns", "UTC")).cast(pl.Datetime("us", "UTC")),
            "time_precision": ["second"] * n,
            "form_type": [None] * n,
            "item": [None] * n,
            "fiscal_period": [None] * n,
            "url": [f"u{rng.integers(0, 30)}" if rng.random() < 0.8 else "" for _ in range(n)],
            "title": ["t"] * n,
            "title_key": [f"t{rng.integers(0, 40)}" for _ in range(n)],
            "text": [" ".join(rng.choice(words, size=rng.integers(1, 14))) for _ in range(n)],
            "dup_cluster": [f"c{rng.integers(0, 50)}" for _ in range(n)],
            "embedding": pl.Series(vecs, dtype=pl.Array(pl.Float32, 384)),
        }
    )


@pytest.fixture()
def lake(tmp_path):
    rng = np.random.default_rng(7)
    lk = Lake(tmp_path / "lake")
    for d in DAYS:
        lk.write("evidence", day_evidence(d, rng, int(rng.integers(0, 25))), date=d)
    return lk


def assert_same_store(a: Store, b: Store) -> None:
    for f in ("passage_id", "public_ns", "ticker", "sector", "family", "ticker_code", "url_code", "title_code", "cluster_code", "emb"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    for f in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(a.tm.X, f), getattr(b.tm.X, f)), f
    assert a.tm.X.shape == b.tm.X.shape
    assert np.array_equal(a.tm.doc_len, b.tm.doc_len)
    assert list(a.tm.vocab.ids.items()) == list(b.tm.vocab.ids.items())


def anchors_for(lake: Lake, days: list[str]) -> pl.DataFrame:
    ev = lake.read("evidence", dates=days)
    a = ev.group_by("date", maintain_order=True).head(3)
    return a.select(
        pl.concat_str(pl.lit("A"), "passage_id").alias("anchor_id"),
        "passage_id",
        "ticker",
        "sector",
        pl.col("text").alias("headline"),
        pl.lit("").alias("summary"),
        "date",
    )


def test_store_grown_day_by_day_is_the_store_built_at_once(lake):
    full = Store.from_evidence(lake.read("evidence", dates=DAYS))
    for k in range(1, len(DAYS) + 1):  # the daily schedule: one more day each run
        store, rep = load_store(lake, DAYS[:k], {"start": DAYS[0]})
        assert rep.partitions_read == (k if k == 1 else 1) and not (rep.rebuilt and k > 1)
    assert_same_store(store, full)
    assert rep.segments <= math.floor(math.log2(len(DAYS))) + 2  # merged as it grows

    # and the pools over the last days: a store holding the range vs the evidence table
    days = DAYS[-6:]
    anchors = anchors_for(lake, days)
    want = candidates_for_days(lake.read("evidence", dates=DAYS), anchors, days, CAL, RetrievalSettings(m0=6), workers=1)
    got = candidates_for_days(store, anchors, days, CAL, RetrievalSettings(m0=6), workers=1)
    assert sum(f.height for f in want.values()) > 0
    for d in days:
        assert_same_frames(got[d], want[d])


def test_a_store_that_holds_later_days_gives_the_same_pools(lake):
    days = DAYS[5:9]
    anchors = anchors_for(lake, days)
    want = candidates_for_days(lake.read("evidence", dates=DAYS[:9]), anchors, days, CAL, RetrievalSettings(m0=6), workers=1)
    load_store(lake, DAYS, {"start": DAYS[0]})  # a later run saved every day
    store, rep = load_store(lake, DAYS[:9], {"start": DAYS[0]})  # a backfill of earlier days
    assert rep.rows_read == 0 and len(store) == lake.read("evidence", dates=DAYS).height
    got = candidates_for_days(store, anchors, days, CAL, RetrievalSettings(m0=6), workers=1)
    for d in days:
        assert_same_frames(got[d], want[d])


def test_reads_only_what_is_new(lake):
    _, rep = load_store(lake, DAYS[:10], {"start": DAYS[0]})
    assert rep.rebuilt == "no saved store" and rep.rows_read == lake.read("evidence", dates=DAYS[:10]).height
    _, rep = load_store(lake, DAYS[:10], {"start": DAYS[0]})
    assert (rep.rows_read, rep.partitions_read, rep.rebuilt) == (0, 0, "")
    _, rep = load_store(lake, DAYS[:12], {"start": DAYS[0]})
    assert rep.partitions_read == 2 and rep.rows_read == lake.read("evidence", dates=DAYS[10:12]).height
    _, rep = load_store(lake, DAYS[:12], {"start": DAYS[1]})
    assert rep.rebuilt == "the settings that shape the store changed"


def test_a_rematerialised_day_rebuilds_the_store(lake):
    load_store(lake, DAYS[:10], {"start": DAYS[0]})
    d = DAYS[4]
    lake.write("evidence", day_evidence(d, np.random.default_rng(99), 9, tag="x"), date=d)
    store, rep = load_store(lake, DAYS[:12], {"start": DAYS[0]})
    assert rep.rebuilt == f"evidence partition {d} changed since the store was saved"
    assert_same_store(store, Store.from_evidence(lake.read("evidence", dates=DAYS[:12])))


def test_evidence_out_of_time_order_rebuilds_instead_of_appending(lake):
    load_store(lake, DAYS[:10], {"start": DAYS[0]})
    d = DAYS[10]  # a partition whose rows are older than the saved ones (its time check failed)
    early = day_evidence(DAYS[2], np.random.default_rng(5), 4, tag="late")
    lake.write("evidence", early, date=d)
    store, rep = load_store(lake, DAYS[:11], {"start": DAYS[0]})
    assert rep.rebuilt == "new evidence sorts before the saved store"
    assert_same_store(store, Store.from_evidence(lake.read("evidence", dates=DAYS[:11])))


def test_a_crash_while_saving_leaves_the_previous_store(lake, monkeypatch):
    load_store(lake, DAYS[:10], {"start": DAYS[0]})
    root = lake.root / store_cache.DIRNAME
    before = (root / "manifest.json").read_bytes()

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(store_cache, "atomic_file", boom)
    with pytest.raises(OSError, match="disk full"):
        load_store(lake, DAYS[:12], {"start": DAYS[0]})
    assert (root / "manifest.json").read_bytes() == before
    monkeypatch.undo()
    store, rep = load_store(lake, DAYS[:12], {"start": DAYS[0]})
    assert rep.rebuilt == "" and rep.partitions_read == 2  # the saved store was still good
    names = {m["name"] for m in store_cache._read_manifest(root)["segments"]}
    assert {p.name for p in root.iterdir() if p.is_dir()} == names  # the crashed run's segment is gone
    assert_same_store(store, Store.from_evidence(lake.read("evidence", dates=DAYS[:12])))
