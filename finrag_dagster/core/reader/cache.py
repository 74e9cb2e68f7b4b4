"""The prompt cache: key = sha256(backend, model, prompt, schema, decoding, engine) → stored output
(the engine part: :func:`.backends.key_decoding`).

Stored in the lake as ``reader_cache/date=D/part-0.parquet`` (D = the anchor's decision day,
which is part of every prompt), so a re-run of a day, or a memory variant that produced the same
prompt, reuses the stored answer without calling the backend. Timing lives here, never in
``reader_outputs``, so re-materialising gives the same bytes.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

import polars as pl
import pyarrow as pa
from filelock import FileLock

from ..storage.schemas import TableSpec

if TYPE_CHECKING:
    from ..storage.lake import Lake

READER_CACHE = TableSpec(
    "reader_cache",
    pa.schema(
        [
            pa.field("key", pa.string(), nullable=False),
            pa.field("backend", pa.string(), nullable=False),
            pa.field("model", pa.string(), nullable=False),
            pa.field("raw", pa.string(), nullable=False),
            pa.field("prompt_tokens", pa.int64(), nullable=False),
            pa.field("output_tokens", pa.int64(), nullable=False),
            pa.field("latency_ms", pa.float64(), nullable=False),
        ]
    ),
    ("date",),
    ("key",),
    "Reader answers by prompt hash (backend, model, prompt, schema, decoding, and the engine where answers depend on it), with tokens and latency.",
)


class PromptCache:
    """Cache entries of one decision day, loaded once and merged back atomically."""

    def __init__(self, lake: Lake, day: str, store: dict[str, dict] | None = None):
        """``store``: day -> entries, shared by the caches a loop opens for the same days (a family's
        variants read the same days one after another): a day's partition is read once, and what a
        flush merged is what the next cache of that day starts from."""
        self.lake, self.day, self._store = lake, day, store
        if store is not None and day in store:
            self._rows: dict[str, dict] = store[day]
        else:
            # under the writers' lock: a flush of another process replaces the file (atomically), and a
            # read that opens it twice (its footer, then its data) would otherwise mix the two files
            with _cache_lock(lake):
                df = lake.read("reader_cache", dates=[day]).drop("date") if lake.exists("reader_cache", date=day) else None
            self._rows = {r["key"]: r for r in df.iter_rows(named=True)} if df is not None else {}
            if store is not None:
                store[day] = self._rows
        self._new: dict[str, dict] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> dict | None:
        r = self._rows.get(key) or self._new.get(key)
        if r is not None:
            self.hits += 1
        else:
            self.misses += 1
        return r

    def put(self, key: str, backend: str, model: str, raw: str, prompt_tokens: int, output_tokens: int, latency_ms: float) -> None:
        self._new[key] = {
            "key": key,
            "backend": backend,
            "model": model,
            "raw": raw,
            "prompt_tokens": int(prompt_tokens),
            "output_tokens": int(output_tokens),
            "latency_ms": float(latency_ms),
        }

    def flush(self) -> int:
        """Merge the new entries into the stored partition and write it back (one atomic partition
        write); returns entries added. Several processes share a day's partition (the loop's
        families run as concurrent steps under Dagster's multiprocess executor), so the partition
        is re-read and written under a lock: an entry another process stored since this cache was
        loaded is kept, never overwritten with an older copy of the partition."""
        if not self._new:
            return 0
        with _cache_lock(self.lake):
            stored = self.lake.read("reader_cache", dates=[self.day]).drop("date") if self.lake.exists("reader_cache", date=self.day) else None
            rows = {r["key"]: r for r in stored.iter_rows(named=True)} if stored is not None else {}
            rows = {**self._new, **rows}  # an answer already stored stays as it is (same prompt, same answer)
            self.lake.write("reader_cache", pl.DataFrame(list(rows.values())), date=self.day)
        n = len(self._new)
        self._rows, self._new = rows, {}
        if self._store is not None:
            self._store[self.day] = rows
        return n


@contextmanager
def _cache_lock(lake: Lake):
    """An exclusive lock on the reader cache, in the lake's local working folder (one machine)."""
    path = lake.work / "_staging" / "reader_cache.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path)):
        yield
