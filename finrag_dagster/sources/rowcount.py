"""Rows of the source files counted without the loaders, so a loader that lost rows is caught.

The raw assets' ``rows_reconcile`` check compares this count with the loader's ``rows_in`` and with
accepted + quarantined rows. It reads the files with other tools than the loaders do: Python's
``csv`` module for CSV (every record after the header rows, blank records included, as the
loaders keep them), the parquet footer's row count for parquet, and for EDGAR filings the
accession numbers themselves (:func:`filing_records`).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import itertools
import json
import re
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from .base import expand_paths
from .csvcheck import MAX_NEWS_RECORD_BYTES, scan_records
from .edgar import MAX_SUBMISSION_BYTES


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
    if name.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as fh:  # streamed, record by record
            reader = csv.reader(fh)
            head = list(itertools.islice(reader, 3))
            return len(head) + sum(1 for _ in reader) - _leading_header_rows(head) if head else 0
    with open(path, "rb") as fh:  # the header rows from the first bytes; a line may have no end
        head = list(itertools.islice(csv.reader(io.StringIO(fh.read(1 << 16).decode("utf-8-sig", errors="replace"), newline="")), 3))
    if not head:
        return 0
    # records counted from the bytes: an oversized record is counted, never read whole
    return max(0, scan_records(path, MAX_NEWS_RECORD_BYTES).count - _leading_header_rows(head))


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
        from ..core.storage.atomic import atomic_file

        with atomic_file(cache) as fh:
            fh.write(json.dumps(now, sort_keys=True).encode())
    return total


def _accession_key(value: object) -> str | None:
    """The 18 digits of an accession number (any punctuation or spacing), or None."""
    digits = "".join(ch for ch in str(value or "") if ch.isdigit())
    return digits if len(digits) == 18 else None


_HEADER_ACCESSION = re.compile(r"ACCESSION NUMBER:[ \t]*(\S+)")
_SEC_DOCUMENT = re.compile(r"<SEC-DOCUMENT>\s*(\S+)")


def _filing_keys(path: Path) -> tuple[list[str], int]:
    """(accession keys, records that stand alone) of one EDGAR source file.

    A record stands alone, i.e. it is one row of its own whatever other files say, when it has no
    usable accession number, when its submissions JSON's arrays do not line up (nothing in it can be
    zipped) or its ``cik`` field contradicts its file name, or when its ``full-submission.txt`` is
    unreadable, not SGML, or names two accessions (folder and header)."""
    name = path.name.lower()
    if name.endswith(".json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        recent = (doc.get("filings") or {}).get("recent") if isinstance(doc.get("filings"), dict) else None
        block = recent if isinstance(recent, dict) else doc
        accessions = block.get("accessionNumber") or []
        if any(isinstance(v, list) and len(v) != len(accessions) for v in block.values()):
            return [], len(accessions)
        if _json_cik_disagrees(doc, path.name):  # whose filings they are is in doubt: each one alone
            return [], len(accessions)
        keys = [_accession_key(a) for a in accessions]
        return [k for k in keys if k], sum(k is None for k in keys)
    if name.endswith(".parquet"):
        pf = pq.ParquetFile(path)
        table = pf.read(columns=["accession"])
        if {"section_idx", "text"} <= set(pf.schema_arrow.names):  # a sections parquet: a filing per distinct accession
            values = pc.unique(table["accession"]).to_pylist()
        else:  # an index parquet: one filing per row
            values = table["accession"].to_pylist()
        keys = [_accession_key(a) for a in values]
        return [k for k in keys if k], sum(k is None for k in keys)
    try:
        if path.stat().st_size > MAX_SUBMISSION_BYTES:
            return [], 1  # not read by the loader either: one row of its own
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return [], 1
    text = head.decode("utf-8", errors="replace")
    if b"\x00" in head or ("<SEC-HEADER>" not in text[:5000] and "ACCESSION NUMBER:" not in text[:5000]):
        return [], 1  # unreadable: one row of its own
    header = text.split("</SEC-HEADER>", 1)[0]
    named = {_accession_key(m.group(1)) for rx in (_HEADER_ACCESSION, _SEC_DOCUMENT) for m in [rx.search(header)] if m}
    named.add(_accession_key(path.parent.name))  # sec-edgar-downloader: <TICKER>/<FORM>/<ACCESSION>/
    named.discard(None)
    if len(named) > 1:
        return [], 1  # its folder and header name two filings: one row of its own
    return (sorted(named), 0) if named else ([], 1)


def _json_cik_disagrees(doc: dict, file_name: str) -> bool:
    """Whether a submissions JSON's ``cik`` field and the CIK in its file name are two numbers."""
    m = re.search(r"CIK(\d+)", file_name, re.IGNORECASE)
    field = str(doc.get("cik") or "").strip()
    return bool(m and field.isdigit() and int(m.group(1)) != int(field))


def filing_records(index_paths, text_paths) -> int:
    """Filings in EDGAR source files counted without the loader: distinct accession numbers over
    every submissions JSON, index or sections parquet and ``full-submission.txt``, plus the records
    that stand alone (no accession number, a JSON whose arrays differ in length, an unreadable
    submission). The loader's ``rows_in`` counts the same filings after merging its sources."""
    pats = ("full-submission.txt",)
    files = set(expand_paths(index_paths, pats)) if index_paths else set()
    files |= set(expand_paths(text_paths, pats)) if text_paths else set()
    keys: set[str] = set()
    alone = 0
    for f in sorted(files, key=str):
        k, n = _filing_keys(f)
        keys.update(k)
        alone += n
    return len(keys) + alone
