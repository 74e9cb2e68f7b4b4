"""Reciprocal Rank Fusion (seed 001): score(d) = Σ_lists w_list / (k + rank_list(d))."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def rrf(lists: Mapping[str, Sequence[str]], weights: Mapping[str, float] | None = None, k: int = 60) -> dict[str, float]:
    """Fused scores of every id in any list (ranks are 1-based; absent lists add nothing)."""
    weights = weights or {}
    out: dict[str, float] = {}
    for name, ids in lists.items():
        w = float(weights.get(name, 1.0))
        seen: set[str] = set()
        for rank, doc in enumerate(ids, start=1):
            if doc in seen:
                continue
            seen.add(doc)
            out[doc] = out.get(doc, 0.0) + w / (k + rank)
    return out


def list_weights(names_ticker_or_metric: bool) -> dict[str, float]:
    """seed 001 financial tuning: keyword ×1.2 when the query names a ticker or metric, else semantic ×1.2."""
    if names_ticker_or_metric:
        return {"keyword": 1.2, "semantic": 1.0, "structured": 1.0}
    return {"keyword": 1.0, "semantic": 1.2, "structured": 1.0}
