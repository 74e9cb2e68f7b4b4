"""Candidate pools for a range of decision days, reading a time-sorted evidence store once."""

from __future__ import annotations

import datetime as dt
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

import polars as pl
import pyarrow as pa

from ..calendar import TradingCalendar
from ..progress import track
from ..settings import RetrievalSettings
from ..storage.schemas import TableSpec
from .lexical import PrefixStats
from .pool import CANDIDATE_SCHEMA, PoolConfig, Store, one_blas_thread, start_day_candidates

CANDIDATES = TableSpec(
    "candidates",
    pa.schema(
        [
            pa.field("anchor_id", pa.string(), nullable=False),
            pa.field("passage_id", pa.string(), nullable=False),
            pa.field("rank", pa.int32(), nullable=False),
            pa.field("bm25", pa.float64(), nullable=False),
            pa.field("dense", pa.float64(), nullable=False),
            pa.field("relevance", pa.float64(), nullable=False),
            pa.field("is_peer", pa.bool_(), nullable=False),
            pa.field("source_family", pa.string(), nullable=False),
            pa.field("ticker", pa.string(), nullable=False),
        ]
    ),
    ("date",),
    ("anchor_id", "rank"),
    "Point-in-time candidate pool (at most M0 = 20) per anchor with BM25, dense and static relevance r.",
    decision_time=True,
)


def pool_config(m0: int, peer_share: float, lookback_sessions: int, cal: TradingCalendar, day: str, k1: float, b: float, eps: float) -> PoolConfig:
    lookback_ns = None
    if lookback_sessions > 0:
        i = cal.session_index(day)
        j = max(0, i - lookback_sessions)
        lookback_ns = int(cal.closes_ns[i] - cal.closes_ns[j])
    return PoolConfig(m0=m0, peer_share=peer_share, lookback_ns=lookback_ns, k1=k1, b=b, epsilon=eps)


def candidates_for_days(
    evidence: pl.DataFrame | Store,
    anchors: pl.DataFrame,
    days: list[str],
    cal: TradingCalendar,
    params: RetrievalSettings = RetrievalSettings(),
    kernel: str = "numba",
    workers: int | None = None,
    log=None,
) -> dict[str, pl.DataFrame]:
    """{day: candidates} for anchors of each day; ``evidence`` (a table, or a store built from one, see
    :mod:`.store_cache`) must cover everything before the last day.

    ``kernel``: "numba" (fused kernels, default) or "numpy" (the reference); identical results.
    ``workers``: threads scoring (day, sector) groups at once (None: the CPUs this process may
    use). Every group is a pure function of the store and that day's frozen BM25 statistics, its
    dense products run on one BLAS thread and parts are joined in a fixed order, so the output is
    the same to the bit for any number of workers. ``log``: a callable for a progress line every 20 days.
    ``params``: the pool size, peer share, look-back and BM25 constants (settings ``[retrieval]``)."""
    p = params
    workers = available_cpus() if workers is None else int(workers)
    if workers < 1:
        raise ValueError(f"workers must be >= 1, not {workers}")
    store = evidence if isinstance(evidence, Store) else Store.from_evidence(evidence)
    stats = PrefixStats(store.tm, k1=p.bm25_k1, b=p.bm25_b, epsilon=p.bm25_epsilon)
    anchors = anchors.with_columns(pl.col("date").cast(pl.Date))
    by_day = anchors.partition_by("date", as_dict=True, maintain_order=True) if anchors.height else {}
    empty = anchors.clear()
    pending = {}
    with one_blas_thread(), ThreadPoolExecutor(workers) if workers > 1 else nullcontext() as ex:
        for d in sorted(days):
            a = by_day.get((dt.date.fromisoformat(d),), empty)
            cfg = pool_config(p.m0, p.peer_share, p.pool_lookback_sessions, cal=cal, day=d, k1=p.bm25_k1, b=p.bm25_b, eps=p.bm25_epsilon)
            pending[d] = start_day_candidates(store, stats, a, int(cal.closes_ns[cal.session_index(d)]), cfg, kernel=kernel, executor=ex)
        return {d: p.frame() for d, p in track(pending.items(), len(pending), "candidate pools", log=log, every=20)}


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def empty_candidates() -> pl.DataFrame:
    return pl.DataFrame(schema=CANDIDATE_SCHEMA)
