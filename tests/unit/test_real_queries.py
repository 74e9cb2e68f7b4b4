"""The hand-judged real-data query set (benchmarks/data/real_queries.jsonl) is well formed.

It does not need the lake: passage ids are checked against the evidence table's id format
(news: ``N`` + 16 hex of sha1, filings: ``F`` + 16 hex), not looked up.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "real_queries.jsonl"
KINDS = {"news_event", "earnings", "filing_item", "comparison", "pit_trap"}
PASSAGE_ID = re.compile(r"[NF][0-9a-f]{16}")
KEYS = {"id", "kind", "query", "as_of", "relevant", "note"}


@pytest.fixture(scope="module")
def queries() -> list[dict]:
    lines = [line for line in PATH.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [json.loads(line) for line in lines]


def test_size_and_kinds(queries):
    assert len(queries) >= 60
    counts = Counter(q["kind"] for q in queries)
    assert set(counts) == KINDS
    assert all(n >= 10 for n in counts.values()), counts


def test_schema(queries):
    assert len({q["id"] for q in queries}) == len(queries), "query ids are unique"
    for q in queries:
        assert KEYS <= set(q) <= KEYS | {"future_ids"}, q["id"]
        assert isinstance(q["id"], str) and q["id"]
        assert isinstance(q["query"], str) and len(q["query"]) >= 10, q["id"]
        assert isinstance(q["note"], str)
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", q["as_of"]), q["id"]
        dt.date.fromisoformat(q["as_of"])
        for r in q["relevant"]:
            assert set(r) == {"passage_id", "grade", "reason"}, q["id"]
            assert r["grade"] in (1, 2), (q["id"], r)
            assert isinstance(r["reason"], str) and 10 <= len(r["reason"]) <= 200, (q["id"], r["passage_id"])


def test_passage_ids_look_like_evidence_ids(queries):
    for q in queries:
        ids = [r["passage_id"] for r in q["relevant"]] + list(q.get("future_ids", []))
        assert all(PASSAGE_ID.fullmatch(p) for p in ids), q["id"]
        assert len(ids) == len(set(ids)), f"{q['id']}: a passage is listed twice"


def test_traps_have_only_future_ids(queries):
    for q in queries:
        if q["kind"] == "pit_trap":
            assert q["relevant"] == [], q["id"]
            assert q.get("future_ids"), q["id"]
        else:
            assert q["relevant"], q["id"]
            assert "future_ids" not in q, q["id"]


def test_file_stays_small():
    assert PATH.stat().st_size < 150_000
