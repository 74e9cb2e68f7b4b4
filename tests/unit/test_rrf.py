"""seed 001's worked RRF example and the list weights."""

import pytest

from finrag_dagster.core.retrieval.rrf import list_weights, rrf


def test_seed_001_worked_example():
    s = rrf({"semantic": ["d1", "d2"], "keyword": ["d1", "d3"]})
    assert s["d1"] == pytest.approx(1 / 61 + 1 / 61) and round(s["d1"], 4) == 0.0328
    only_one = rrf({"semantic": ["d1"], "keyword": []})
    assert only_one["d1"] == pytest.approx(1 / 61) and round(only_one["d1"], 4) == 0.0164
    assert s["d2"] == pytest.approx(1 / 62)


def test_weights_and_duplicates():
    w = list_weights(True)
    s = rrf({"semantic": ["a"], "keyword": ["b", "b"]}, w)
    assert s["b"] == pytest.approx(1.2 / 61) and s["a"] == pytest.approx(1.0 / 61)
    assert list_weights(False)["semantic"] == 1.2 and list_weights(False)["keyword"] == 1.0
