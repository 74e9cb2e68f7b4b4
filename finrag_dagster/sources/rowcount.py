"""Rows of the source files counted without the loaders, so a loader that lost rows is caught.

The raw assets' ``rows_reconcile`` check compares this count with the loader's ``rows_in`` and with
accepted + quarantined rows. It reads the files with other tools than the loaders do: Python's
``csv`` module for CSV (every record after the header rows, blank records included, as the
loaders keep them), the parquet footer's row count for parquet.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import itertools
import json
from pathlib import Path

import pyarrow.parquet as pq

from .base import expand_paths


def _leading_header_rows(records: list[list[str]]) -> int:
    """Header records before the first data record (one for FNSPID; up to three for yfinance
    exports: ``Price``/``Ticker``/``Date`` rows). A data record starts with a digit."""
    n = 0
    for r in records:
        first = r[0].strip() if r else ""
        if first[:1].isdigit():
            break
        if not r:  # a blank record after the header is a data row (the loaders keep it)
            break
        n += 1
        if n == 3:
            break
    return max(n, 1)


def file_rows(path: Path) -> int:
    """Data rows of one news or price file (CSV, CSV.gz or parquet)."""
    name = path.name.lower()
    if name.endswith(".parquet"):
        return pq.ParquetFile(path).metadata.num_rows
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as fh:  # streamed, record by record
        reader = csv.reader(fh)
        head = list(itertools.islice(reader, 3))
        if not head:
            return 0
        return len(head) + sum(1 for _ in reader) - _leading_header_rows(head)


def _fingerprint(path: Path) -> list:
    st = path.stat()
    with open(path, "rb") as fh:
        head = hashlib.sha1(fh.read(1 << 20)).hexdigest()
    return [st.st_size, st.st_mtime_ns, head]


def source_rows(paths, patterns: tuple[str, ...], cache: Path | None = None) -> int:
    """Data rows of every file that ``paths`` name (files, globs or folders). ``cache``: a JSON
    file of earlier counts by file, reused while a file's size, mtime and first MiB are unchanged."""
    seen: dict = {}
    if cache is not None and cache.exists():
        try:
            seen = json.loads(cache.read_text())
        except ValueError:
            seen = {}
    total, now = 0, {}
    for f in expand_paths(paths, patterns):
        fp = _fingerprint(f)
        old = seen.get(str(f))
        n = old[1] if old and old[0] == fp else file_rows(f)
        now[str(f)] = [fp, n]
        total += n
    if cache is not None:
        from ..core.atomic import atomic_file

        with atomic_file(cache) as fh:
            fh.write(json.dumps(now, sort_keys=True).encode())
    return total
