"""The candidate stage's evidence store kept on disk and grown by appending new days.

Building the store (:class:`.pool.Store`) reads and tokenises every evidence passage since
``calendar.start``; this module keeps the built store under ``<lake>/_staging/candidates_store/``
and, on the next run, appends only the evidence partitions it has not seen. The store is the same,
row for row and term id for term id, as one built from the whole evidence table at once
(tests/unit/test_store_cache.py), so candidate pools are the same bytes either way. Why appending is
exact, the layout, and when the store is rebuilt: docs/retrieval.md, "The saved store" and
"`core/retrieval/store_cache.py`: design notes".
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import scipy.sparse as sp
from filelock import FileLock

from ..storage.atomic import atomic_file
from .lexical import TermMatrix, Vocabulary
from .pool import Store

VERSION = 1
COLUMNS = ["passage_id", "public_time", "ticker", "sector", "source_family", "url", "title_key", "dup_cluster"]
DIRNAME = Path("_staging") / "candidates_store"


@dataclass
class StoreReport:
    """What loading the store did (asset metadata)."""

    rows: int = 0  # rows of the store handed to the run
    rows_read: int = 0  # evidence rows read from the lake this run (0: nothing new)
    partitions_read: int = 0
    segments: int = 0
    rebuilt: str = ""  # why the store was rebuilt from scratch ("" when it was extended or reused)
    notes: list[str] = field(default_factory=list)


def fingerprint(lake, path) -> list[int]:
    """(size, mtime ns, inode) of a partition file: the lake replaces a partition by renaming a new
    file into place, so a rewritten partition has a new inode and time. On object storage (no
    inodes, times in seconds) the third number is a digest of the object's last 64 KiB, the
    parquet footer with its row counts and column statistics."""
    if not lake.remote:
        st = Path(path).stat()
        return [st.st_size, st.st_mtime_ns, st.st_ino]
    size, mtime = lake.file_stamp(path)
    with lake.fs.open_input_file(str(path)) as fh:
        fh.seek(max(0, size - 65536))
        tail = fh.read()
    return [size, mtime, int.from_bytes(hashlib.sha256(tail).digest()[:7], "big")]


# ---------------------------------------------------------------------------- term matrices
def append_terms(vocab: Vocabulary, block: TermMatrix) -> tuple[TermMatrix, list[str]]:
    """``block`` (built with its own vocabulary) renumbered into ``vocab``, which gains the block's
    new terms in their first-occurrence order; returns the renumbered block and the new terms."""
    local = sorted(block.vocab.ids.items(), key=lambda kv: kv[1])
    glob = np.empty(len(local), dtype=np.int64)
    new: list[str] = []
    ids = vocab.ids
    for term, i in local:
        g = ids.get(term)
        if g is None:
            g = ids[term] = len(ids)
            new.append(term)
        glob[i] = g
    X = block.X
    indices = glob[X.indices] if X.nnz else np.zeros(0, dtype=np.int64)
    Y = sp.csr_matrix((X.data.copy(), indices, X.indptr.copy()), shape=(X.shape[0], len(ids)))
    Y.sort_indices()  # rows ascending in term id, as a build over the whole store makes them
    return TermMatrix(Y, block.doc_len, vocab), new


def concat_terms(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], vocab: Vocabulary) -> TermMatrix:
    """One term matrix from (indptr, indices, data, doc_len) blocks that share ``vocab``'s ids."""
    if not parts:
        return TermMatrix(sp.csr_matrix((0, len(vocab)), dtype=np.int32), np.zeros(0, dtype=np.int64), vocab)
    offsets = np.cumsum([0] + [int(p[0][-1]) for p in parts])
    indptr = np.concatenate([parts[0][0][:1]] + [p[0][1:] + off for p, off in zip(parts, offsets)]).astype(np.int64)
    indices = np.concatenate([p[1] for p in parts]).astype(np.int64)
    data = np.concatenate([p[2] for p in parts]).astype(np.int32)
    doc_len = np.concatenate([p[3] for p in parts]).astype(np.int64)
    X = sp.csr_matrix((data, indices, indptr), shape=(len(doc_len), len(vocab)))
    return TermMatrix(X, doc_len, vocab)


# ---------------------------------------------------------------------------- segments
@dataclass
class Segment:
    name: str
    first: str
    last: str
    rows: int
    columns: pl.DataFrame
    emb: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    doc_len: np.ndarray
    terms: list[str]

    def meta(self) -> dict:
        return {"name": self.name, "first": self.first, "last": self.last, "rows": self.rows, "terms": len(self.terms)}


def _write_segment(root: Path, seg: Segment) -> None:
    tmp = root / f".tmp-{uuid.uuid4().hex}"
    tmp.mkdir(parents=True)
    try:
        pq.write_table(seg.columns.to_arrow(), tmp / "columns.parquet", compression="zstd")
        with open(tmp / "arrays.npz", "wb") as fh:
            np.savez(fh, emb=seg.emb, indptr=seg.indptr, indices=seg.indices, data=seg.data, doc_len=seg.doc_len)
        (tmp / "terms.json").write_text(json.dumps(seg.terms))
        os.replace(tmp, root / seg.name)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _read_segment(root: Path, meta: dict) -> Segment:
    d = root / meta["name"]
    cols = pl.read_parquet(d / "columns.parquet")
    with np.load(d / "arrays.npz") as z:
        arrays = {k: z[k] for k in ("emb", "indptr", "indices", "data", "doc_len")}
    terms = json.loads((d / "terms.json").read_text())
    if cols.height != meta["rows"] or len(terms) != meta["terms"] or arrays["emb"].shape[0] != meta["rows"]:
        raise ValueError(f"candidates store segment {meta['name']} does not match its manifest")
    return Segment(meta["name"], meta["first"], meta["last"], meta["rows"], cols, terms=terms, **arrays)


def _merge(a: Segment, b: Segment) -> Segment:
    """Two consecutive segments as one (b's term ids already continue a's)."""
    off = int(a.indptr[-1])
    return Segment(
        f"seg-{a.first}_{b.last}-{uuid.uuid4().hex[:8]}",
        a.first,
        b.last,
        a.rows + b.rows,
        pl.concat([a.columns, b.columns]),
        np.concatenate([a.emb, b.emb]),
        np.concatenate([a.indptr, b.indptr[1:] + off]),
        np.concatenate([a.indices, b.indices]),
        np.concatenate([a.data, b.data]),
        np.concatenate([a.doc_len, b.doc_len]),
        a.terms + b.terms,
    )


def compact(segments: list[Segment]) -> list[Segment]:
    """Merge the last two segments while the older is at most twice the newer (a binary counter:
    O(log n) segments, each row rewritten O(log n) times)."""
    segs = list(segments)
    while len(segs) > 1 and segs[-2].rows <= 2 * segs[-1].rows:
        segs[-2:] = [_merge(segs[-2], segs[-1])]
    return segs


def block_segment(ev: pl.DataFrame, vocab: Vocabulary, first: str, last: str) -> Segment:
    """A segment of evidence rows (sorted as the store sorts) appended to ``vocab``."""
    ev = ev.sort(["public_time", "passage_id"])
    tm, new = append_terms(vocab, TermMatrix.from_series(ev["text"]))
    emb = np.ascontiguousarray(ev["embedding"].to_numpy(), dtype=np.float32) if ev.height else np.zeros((0, 384), np.float32)
    X = tm.X
    return Segment(
        f"seg-{first}_{last}-{uuid.uuid4().hex[:8]}",
        first,
        last,
        ev.height,
        ev.select(COLUMNS),
        emb,
        np.asarray(X.indptr, dtype=np.int64),
        np.asarray(X.indices, dtype=np.int64),
        np.asarray(X.data, dtype=np.int32),
        np.asarray(tm.doc_len, dtype=np.int64),
        new,
    )


# ---------------------------------------------------------------------------- the store
def _last_key(seg: Segment) -> tuple[int, str] | None:
    if not seg.rows:
        return None
    c = seg.columns.tail(1)
    return int(c["public_time"].dt.epoch("ns")[0]), c["passage_id"][0]


def load_store(lake, history: list[str], key: dict, log=None) -> tuple[Store, StoreReport]:
    """The evidence store over (at least) the partitions ``history`` (consecutive sessions from
    ``calendar.start``), extended from the saved store with the partitions it lacks; ``key``: the
    settings that shape the store (a change rebuilds it)."""
    root = lake.work / DIRNAME
    root.mkdir(parents=True, exist_ok=True)
    rep = StoreReport()
    key = {"version": VERSION, **key}
    with FileLock(str(root / "lock")):
        manifest = _read_manifest(root)
        segments: list[Segment] = []
        parts: list[list] = []  # [date, fingerprint] in order
        if manifest is None:
            rep.rebuilt = "no saved store"
        elif manifest.get("key") != key:
            rep.rebuilt = "the settings that shape the store changed"
        else:
            parts = manifest["partitions"]
            why = _stale(lake, parts, history)
            if why:
                rep.rebuilt, parts = why, []
            else:
                try:
                    segments = [_read_segment(root, m) for m in manifest["segments"]]
                except (OSError, ValueError, KeyError) as e:
                    rep.rebuilt, parts, segments = f"the saved store could not be read ({e})", [], []
        vocab = Vocabulary()
        for seg in segments:
            for t in seg.terms:
                vocab.ids[t] = len(vocab.ids)
        todo = history[len(parts) :]
        if todo:
            ev = lake.read("evidence", dates=todo)
            prints = [[d, fingerprint(lake, lake.path("evidence", date=d))] for d in todo]
            rep.rows_read, rep.partitions_read = ev.height, len(todo)
            seg = block_segment(ev, vocab, todo[0], todo[-1])
            last = next((_last_key(s) for s in reversed(segments) if s.rows), None)
            if last is not None and seg.rows:
                first = (int(seg.columns["public_time"].dt.epoch("ns")[0]), seg.columns["passage_id"][0])
                if first <= last:  # evidence that sorts before saved rows: the partitions broke their time order
                    rep.notes.append("new evidence sorts before the saved store; rebuilt")
                    rep.rebuilt = "new evidence sorts before the saved store"
                    ev = lake.read("evidence", dates=history)
                    vocab = Vocabulary()
                    seg = block_segment(ev, vocab, history[0], history[-1])
                    prints = [[d, fingerprint(lake, lake.path("evidence", date=d))] for d in history]
                    rep.rows_read, rep.partitions_read = ev.height, len(history)
                    segments, parts = [], []
            segments = compact([*segments, seg])
            parts = parts + prints
            _save(root, key, parts, segments)
        rep.segments = len(segments)
    store = _assemble(segments, vocab)
    rep.rows = len(store)
    if log is not None:
        how = f"rebuilt ({rep.rebuilt})" if rep.rebuilt else ("extended" if rep.rows_read else "reused")
        log(
            f"candidates store {how}: {rep.rows} passages in {rep.segments} segment(s); read {rep.rows_read} evidence rows "
            f"from {rep.partitions_read} partition(s)"
        )
    return store, rep


def _read_manifest(root: Path) -> dict | None:
    p = root / "manifest.json"
    if not p.exists():
        return None
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _stale(lake, parts: list[list], history: list[str]) -> str:
    """Why the saved partitions cannot be extended to ``history`` ("" when they can)."""
    for i, (d, fp) in enumerate(parts):
        if i < len(history) and history[i] != d:
            return f"the saved store starts its days differently ({d} where {history[i]} was expected)"
        p = lake.path("evidence", date=d)
        if not lake.is_file(p):
            return f"evidence partition {d} is gone"
        if fingerprint(lake, p) != fp:
            return f"evidence partition {d} changed since the store was saved"
    return ""


def _save(root: Path, key: dict, parts: list[list], segments: list[Segment]) -> None:
    names = {s.name for s in segments}
    for seg in segments:
        if not (root / seg.name).exists():
            _write_segment(root, seg)
    manifest = {"key": key, "partitions": parts, "segments": [s.meta() for s in segments]}
    with atomic_file(root / "manifest.json", prefix=".tmp-", suffix=".json") as fh:
        fh.write(json.dumps(manifest).encode())
    for p in root.iterdir():  # merged-away segments and temporary folders of crashed runs
        if p.is_dir() and p.name not in names:
            shutil.rmtree(p, ignore_errors=True)


def _assemble(segments: list[Segment], vocab: Vocabulary) -> Store:
    cols = pl.concat([s.columns for s in segments]) if segments else pl.DataFrame()
    emb = np.concatenate([s.emb for s in segments]) if segments else np.zeros((0, 384), np.float32)
    store = Store._columns_of(cols, emb=emb)
    store.tm = concat_terms([(s.indptr, s.indices, s.data, s.doc_len) for s in segments], vocab)
    return store
