"""Query retrieval obeys ``as_of`` to the microsecond (docs/method.md §8: everything obeys an as_of time).

Passages one microsecond before, exactly at, and half an hour after ``as_of``: only the first is
in the index, its BM25 statistics and every search mode's hits; a bare-date ``as_of`` means the
end of that day in New York.
"""

import datetime as dt

import numpy as np
import pandas as pd
import polars as pl

from finrag_dagster.core.retrieval.engine import _as_of_ns
from finrag_dagster.core.retrieval.query import parse_query
from finrag_dagster.core.retrieval.search import SearchConfig, SearchIndex, run_search

UTC = dt.timezone.utc
AS_OF = dt.datetime(2021, 3, 3, 21, 0, tzinfo=UTC)  # 16:00 New York


def evidence(rows):
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(len(rows), 384)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    return pl.DataFrame(
        {
            "passage_id": [r[0] for r in rows],
            "ticker": ["NVDA"] * len(rows),
            "source_family": ["news"] * len(rows),
            "public_time": [r[1] for r in rows],
            "form_type": [None] * len(rows),
            "item": [None] * len(rows),
            "fiscal_period": [None] * len(rows),
            "title": [r[0] for r in rows],
            "text": [r[2] for r in rows],
            "url": [f"u{r[0]}" for r in rows],
            "embedding": pl.Series(emb, dtype=pl.Array(pl.Float32, 384)),
        },
        schema_overrides={"public_time": pl.Datetime("us", "UTC"), "form_type": pl.Utf8, "item": pl.Utf8, "fiscal_period": pl.Utf8},
    )


def test_search_index_holds_exactly_the_passages_public_before_as_of():
    us = dt.timedelta(microseconds=1)
    ev = evidence(
        [
            ("before", AS_OF - us, "nvidia margin guidance"),
            ("at", AS_OF, "nvidia margin guidance record"),
            ("after", AS_OF + dt.timedelta(minutes=30), "nvidia margin guidance surge blowout"),
        ]
    )
    as_of_ns = int(pd.Timestamp(AS_OF).value)
    idx = SearchIndex(ev, as_of_ns)
    assert idx.pid == ["before"]
    assert idx.stats.n == 1  # BM25 statistics of the visible corpus only
    q = parse_query("NVDA margin guidance", {"NVDA": ["nvidia"]}, AS_OF.date())
    for mode in ("bm25", "dense", "hybrid", "full"):
        res = run_search(idx, q, np.ones(384, dtype=np.float32) / np.sqrt(384), ["after", "at", "before"], SearchConfig(k=5), mode)
        assert [h.passage_id for h in res.hits] == ["before"], mode


def test_a_bare_date_as_of_is_the_end_of_that_day_in_new_york():
    assert _as_of_ns("2021-03-03") == pd.Timestamp("2021-03-03 23:59:59", tz="America/New_York").value
    assert _as_of_ns("2021-03-03T16:00") == pd.Timestamp("2021-03-03 21:00", tz="UTC").value


def test_an_index_with_nothing_public_yet_is_empty_and_rows_are_in_public_time_order():
    """Nothing visible: an empty float32 embedding matrix of the model's width, and every mode finds
    nothing; visible passages are rows in (public_time, passage_id) order, whatever the input order."""
    hour = dt.timedelta(hours=1)
    ev = evidence([("b", AS_OF - 2 * hour, "nvidia margin"), ("a", AS_OF - 2 * hour, "nvidia margin"), ("c", AS_OF - 3 * hour, "nvidia")])
    empty = SearchIndex(ev, int(pd.Timestamp(AS_OF - 4 * hour).value))
    assert empty.pid == [] and empty.emb.shape == (0, 384) and empty.emb.dtype == np.float32
    q = parse_query("NVDA margin", {"NVDA": ["nvidia"]}, AS_OF.date())
    for mode in ("bm25", "dense", "hybrid", "full"):
        assert run_search(empty, q, np.ones(384, dtype=np.float32) / np.sqrt(384), [], SearchConfig(k=5), mode).hits == []
    idx = SearchIndex(ev, int(pd.Timestamp(AS_OF).value))
    assert idx.pid == ["c", "a", "b"] and idx.emb.dtype == np.float32
    assert np.array_equal(idx.emb[idx.row["a"]], ev.filter(pl.col("passage_id") == "a")["embedding"].to_numpy()[0])
    assert idx.keyword("margin")[0].tolist() == [2, 1]  # ties: the later row first
