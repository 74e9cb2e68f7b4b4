"""Rows of the source files counted without the loaders, so a loader that lost rows is caught.

The raw assets' ``rows_reconcile`` check compares this count with the loader's ``rows_in`` and with
accepted + quarantined rows. It reads the files with other tools than the loaders do: Python's
``csv`` module for CSV, on the text decoded as its byte-order mark says and with its own line ends
(every record after the header rows of its format, blank records included, as the loaders keep
them), the parquet footer's row count for parquet, and for EDGAR filings the
accession numbers themselves (:func:`filing_records`).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import re
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

from .base import bom_encoding, expand_paths
from .edgar import MAX_SUBMISSION_BYTES

# The count's own reading of a file: Python's ``csv`` module over the decoded text, record by record.
# A change to how it counts must change this, so counts cached by an earlier version are not reused.
COUNT_VERSION = 2
LONG_TEXT = 1 << 20  # characters of a record read as they are; beyond, only its CSV structure is kept
_RUN = re.compile(r'[^"\r\n]+')
_QUOTES = re.compile(r'"{2,}')
FIELD_LIMIT = (1 << 31) - 1  # the csv module's field limit while counting: a squeezed field holds no text


def _squeeze(text: str) -> str:
    """``text`` with the same CSV record structure in a few characters. Where records end depends only
    on the quotes and line ends, and on whether a quote opens a field, which the character before it
    decides: so each run of other characters becomes its last one's kind (a comma, or ``x``) and each
    run of quotes one or two quotes (the same parity)."""
    text = _RUN.sub(lambda m: "," if m.group(0)[-1] == "," else "x", text)
    return _QUOTES.sub(lambda m: '"' if len(m.group(0)) % 2 else '""', text)


class _Lines:
    """The lines of a decoded text stream for ``csv.reader`` (split at LF, CRLF or a lone CR, as the
    ``csv`` module splits them), a record's text past :data:`LONG_TEXT` characters squeezed
    (:func:`_squeeze`) and read in pieces, so memory stays bounded whatever a record's size. The
    reader resets ``since`` each time it returns a record."""

    def __init__(self, fh) -> None:
        self.fh = fh
        self.since = 0  # characters handed out since the last record ended

    def __iter__(self):
        parts: list[str] = []  # the squeezed pieces of a line read in pieces
        while True:
            piece = self.fh.readline(LONG_TEXT)
            if parts and parts[-1].endswith("\r") and not piece.startswith("\n"):
                yield self._out("".join(parts))  # that CR ended the line
                parts = []
            if not piece:
                if parts:
                    yield self._out("".join(parts))
                return
            ended = len(piece) < LONG_TEXT or piece.endswith("\n")
            if not parts and ended:
                yield self._out(piece if self.since + len(piece) <= LONG_TEXT else _squeeze(piece))
                continue
            parts.append(_squeeze(piece))
            if ended:
                yield self._out("".join(parts))
                parts = []

    def _out(self, line: str) -> str:
        self.since += len(line)
        return line


def _text_stream(raw) -> io.TextIOWrapper:
    """A binary stream decoded as its byte-order mark says (UTF-8 by default, undecodable bytes as
    U+FFFD), with its line ends as they are."""
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    return io.TextIOWrapper(raw, encoding=bom_encoding(head) or "utf-8-sig", errors="replace", newline="")


def _header_records(head: list[list[str]]) -> int:
    """Header records at the top of a news or price CSV: one, except a yfinance export's (a
    ``Price`` row then ``Ticker`` and maybe ``Date`` rows; or a row repeating the ticker under
    an empty first cell), as the price format defines them (module ``prices``)."""
    if len(head) < 2 or not head[0] or not head[1]:
        return 1
    first, second = head[0][0].strip().lower(), [c.strip() for c in head[1]]
    if first == "price" and second[0].lower() == "ticker":
        return 3 if len(head) > 2 and head[2] and head[2][0].strip().lower() == "date" else 2
    if second[0] == "" and "stock_symbol" not in {c.strip().lower() for c in head[0]}:
        marks = {c for c in second[1:] if c}
        if len(marks) == 1 and not _is_number(next(iter(marks))):
            return 2
    return 1


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_records(raw) -> int:
    """Data records of a CSV byte stream: Python's ``csv`` module over the decoded text, header
    records left out; blank records count (the loaders keep them as rows)."""
    lines = _Lines(_text_stream(raw))
    reader = csv.reader(lines)
    head: list[list[str]] = []
    n = 0
    limit = csv.field_size_limit(FIELD_LIMIT)  # a field's first LONG_TEXT characters, then its squeezed structure
    try:
        for record in reader:
            lines.since = 0
            if len(head) < 3:
                head.append(record)
            n += 1
    finally:
        csv.field_size_limit(limit)
    return max(0, n - _header_records(head)) if head else 0


def file_rows(path: Path) -> int:
    """Data rows of one news or price file (CSV, CSV.gz or parquet), counted without the loaders:
    the parquet footer, or :func:`csv_records` over the file's text."""
    name = path.name.lower()
    if name.endswith(".parquet"):
        return pq.ParquetFile(path).metadata.num_rows
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        return csv_records(io.BufferedReader(fh, 1 << 22) if name.endswith(".gz") else fh)


def _fingerprint(path: Path) -> list:
    st = path.stat()
    with open(path, "rb") as fh:
        head = hashlib.sha1(fh.read(1 << 20)).hexdigest()
    return [COUNT_VERSION, st.st_size, st.st_mtime_ns, head]


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


def _bom_decode(data: bytes) -> str:
    """Text as its byte-order mark says (UTF-8 without one)."""
    return data.decode(bom_encoding(data) or "utf-8")


def _filing_keys(path: Path) -> tuple[list[str], int]:
    """(accession keys, records that stand alone) of one EDGAR source file.

    A record stands alone, i.e. it is one row of its own whatever other files say, when it has no
    usable accession number, when its submissions JSON's arrays do not line up (nothing in it can be
    zipped) or its ``cik`` field contradicts its file name, or when its ``full-submission.txt`` is
    unreadable, not SGML, or names two accessions (folder and header)."""
    name = path.name.lower()
    if name.endswith(".json"):
        doc = json.loads(_bom_decode(path.read_bytes()))
        recent = (doc.get("filings") or {}).get("recent") if isinstance(doc.get("filings"), dict) else None
        block = recent if isinstance(recent, dict) else doc
        accessions = block.get("accessionNumber") or []
        if any(isinstance(v, list) and len(v) != len(accessions) for v in block.values()):
            return [], len(accessions)
        if _json_cik_disagrees(doc, path.name):  # whose filings they are is in doubt: each one alone
            return [], len(accessions)
        keys = [_accession_key(a) for a in accessions]
        found = [k for k in keys if k]
        # an accession listed again in the same JSON is a record of its own (one entry is kept, the other quarantined)
        return found, sum(k is None for k in keys) + len(found) - len(set(found))
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
    bom = bom_encoding(head)
    text = head.decode(bom or "utf-8", errors="replace")
    if (bom is None and b"\x00" in head) or ("<SEC-HEADER>" not in text[:5000] and "ACCESSION NUMBER:" not in text[:5000]):
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
