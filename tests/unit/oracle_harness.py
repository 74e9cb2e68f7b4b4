"""The harness the memory oracle tests share: a seeded coin, and the loop's environment over a
planted world held in memory (no lake stage runs; the reader is the test's own planted backend)."""

from __future__ import annotations

import hashlib

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.loop import DayData, LoopEnv
from finrag_dagster.core.memory.source_memory import MemoryParams
from finrag_dagster.core.reader.cache import PromptCache
from finrag_dagster.core.tables import Lake

H = ("1D", "3D", "5D")
CLASS_WEIGHTS = {-1: 1 / 0.9, 0: 1 / 1.2, 1: 1 / 0.9}  # w_y = 1/(3 pi_y) for pi = (0.3, 0.4, 0.3)


def seeded(*parts) -> float:
    """A number in [0, 1) fixed by ``parts``: the planted reader's coin."""
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "little") / 2**64


def oracle_env(world: tuple, backend, first_day: str, cache_dir=None, weights: dict = CLASS_WEIGHTS, family_of=None) -> LoopEnv:
    """The loop's environment over ``world`` = (anchors, candidates, labels, evidence) by day: one split
    from ``first_day``, fixed class weights, prompt answers cached in ``cache_dir`` (None: not cached)."""
    anchors, cands, labels, evidence = world
    lake = Lake(cache_dir) if cache_dir is not None else None
    return LoopEnv(
        cal=nyse(),
        day_data=lambda d: DayData(anchors[d], cands[d], {}),
        split_start=lambda d: first_day,
        class_weights=lambda s: {h: dict(weights) for h in H},
        labels_of=lambda d: labels[d],
        past_of=lambda d, v: None,
        evidence=evidence,
        companies={},
        backend=backend,
        cache_of=(lambda d: PromptCache(lake, d)) if lake is not None else (lambda d: _NoCache()),
        decoding={},
        m=5,
        params=MemoryParams(),
        family_of=family_of,
    )


class _NoCache:
    """A prompt cache that keeps nothing: every prompt goes to the backend."""

    hits = misses = 0

    def get(self, key):
        return None

    def put(self, key, *a, **kw):
        pass

    def flush(self):
        return 0
