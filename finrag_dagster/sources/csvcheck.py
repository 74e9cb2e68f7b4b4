"""Where a CSV file breaks: the line a malformed record starts on, for errors that name it.

Both checks stream the file in bounded chunks, so a many-gigabyte FNSPID dump is checked in a
few megabytes of memory.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from pathlib import Path

import numpy as np

CHUNK_BYTES = 1 << 24  # 16 MiB
NEWLINE = b"\n"


def _chunks(path: Path, limit_bytes: int | None = None):
    """The file's bytes in chunks of at most CHUNK_BYTES (only the first ``limit_bytes`` if given)."""
    left = limit_bytes
    with open(path, "rb") as fh:
        while left is None or left > 0:
            b = fh.read(CHUNK_BYTES if left is None else min(CHUNK_BYTES, left))
            if not b:
                return
            if left is not None:
                left -= len(b)
            yield b


GZIP_MAGIC = b"\x1f\x8b"


def gzip_named_csv(path: Path) -> str | None:
    """The error for a gzip-compressed file whose name ends in ``.csv`` (None when it is not one)."""
    with open(path, "rb") as fh:
        if fh.read(2) != GZIP_MAGIC:
            return None
    return f"{path.name}: gzip-compressed data in a file named .csv: rename it to {path.name}.gz (read as compressed CSV) or decompress it"


SNIFF_BYTES = 1 << 16  # the bytes read to tell a file's encoding and delimiter
_OTHER_DELIMITERS = ((";", "';'"), ("\t", "a tab"), ("|", "'|'"))
_DECIMAL_COMMA = re.compile(r"\d+,\d+")


def utf16_kind(head: bytes) -> str | None:
    """ "UTF-16 (...)" / "UTF-32 (...)" when the bytes are text in those encodings (a byte-order mark,
    or, without one, every other byte NUL), else None."""
    if head.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32 text (it starts with a UTF-32 byte-order mark)"
    if head.startswith(b"\xff\xfe"):
        return "UTF-16 text (little-endian: it starts with the byte-order mark FF FE)"
    if head.startswith(b"\xfe\xff"):
        return "UTF-16 text (big-endian: it starts with the byte-order mark FE FF)"
    n = len(head) // 2
    if n >= 4:
        even, odd = head[0 : 2 * n : 2].count(0), head[1 : 2 * n : 2].count(0)
        if max(even, odd) >= 0.3 * n and min(even, odd) <= 0.02 * n:
            order = "little" if odd > even else "big"
            return f"UTF-16 text ({order}-endian without a byte-order mark: every other byte is NUL)"
    return None


def check_csv_format(path: Path) -> None:
    """A :class:`SourceError` naming the cause when a CSV is not UTF-8 comma-separated text that the
    loaders can read, told from its first :data:`SNIFF_BYTES`: UTF-16 or UTF-32 text (say so, and to
    re-save it as UTF-8), or fields separated by ';', a tab or '|' (and numbers with decimal commas).
    Line ends that are a CR alone are found by :func:`scan_records`, which reads the whole file."""
    from .base import SourceError

    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    kind = utf16_kind(head)
    if kind:
        raise SourceError(f"{path.name}: the file is {kind}, not UTF-8: re-save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)")
    text = head.decode("utf-8-sig", errors="replace")
    first, _, rest = text.replace("\r\n", "\n").replace("\r", "\n").partition("\n")
    if len(next(csv.reader([first]), [])) != 1:
        return
    for sep, name in _OTHER_DELIMITERS:
        if sep in first:
            dec = _DECIMAL_COMMA.search(rest)
            decimal = f", and its numbers use decimal commas ({dec.group(0)!r})" if dec else ""
            raise SourceError(
                f"{path.name}: the delimiter is {name}, not ',' (header {first[:60]!r}){decimal}: "
                f"re-export it comma-separated{' with . as the decimal point' if dec else ''}"
            )


def header_names(path: Path) -> list[str]:
    """The first record of a CSV (its header), read with Python's ``csv`` module."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as fh:
        return next(csv.reader(fh), [])


def duplicate_column(names: list[str], canonical=None) -> str | None:
    """``"duplicate column 'Close' (columns 5 and 6)"`` for the first name that repeats an earlier
    one (compared stripped and case-insensitive, or by ``canonical(name)``), else None. Unnamed
    columns (an index, trailing commas) are not compared."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        key = name.strip().lower()
        key = canonical(key) if canonical else key
        if not key:
            continue
        if key in seen:
            return f"duplicate column {name.strip()!r} (columns {seen[key] + 1} and {i + 1})"
        seen[key] = i
    return None


def is_utf8(path: Path) -> bool:
    """Whether the whole file decodes as UTF-8 (an incremental decoder over chunks)."""
    dec = codecs.getincrementaldecoder("utf-8")()
    try:
        for b in _chunks(path):
            dec.decode(b)
        dec.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


class _ChunkReader(io.RawIOBase):
    """A raw byte stream over :func:`_chunks` (so the CSV reader can stop at ``limit_bytes``)."""

    def __init__(self, path: Path, limit_bytes: int | None):
        self._it = _chunks(path, limit_bytes)
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while not self._buf:
            try:
                self._buf = next(self._it)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n], self._buf = self._buf[:n], self._buf[n:]
        return n


def csv_problem(path: Path, limit_bytes: int | None = None) -> str | None:
    """``"line N: <what>"`` for the first malformed record of a CSV, or None when it parses.

    Reads with Python's ``csv`` module in strict mode (RFC 4180 quoting): an unterminated quote,
    a stray quote inside an unquoted field, or a NUL byte is reported at the line where its
    record starts. Undecodable bytes are read as U+FFFD (the loaders say so in a flag).
    """
    newlines = 0
    for b in _chunks(path, limit_bytes):
        i = b.find(b"\x00")
        if i >= 0:
            line = newlines + b.count(NEWLINE, 0, i) + 1
            return f"line {line}: NUL byte (a binary or corrupt file)"
        newlines += b.count(NEWLINE)
    if limit_bytes is None:
        text = open(path, encoding="utf-8", errors="replace", newline="", buffering=CHUNK_BYTES)  # noqa: SIM115 - closed below
    else:
        text = io.TextIOWrapper(io.BufferedReader(_ChunkReader(path, limit_bytes), CHUNK_BYTES), encoding="utf-8", errors="replace", newline="")
    with text:
        return _first_bad_record(text)


def _first_bad_record(text) -> str | None:
    reader = csv.reader(text, strict=True)
    start = 1
    while True:
        try:
            next(reader)
        except StopIteration:
            return None
        except csv.Error as exc:
            msg = str(exc)
            if "unexpected end of data" in msg or "EOF" in msg:
                msg = "a quoted field is never closed (unterminated quote)"
            return f"line {start}: {msg}"
        start = reader.line_num + 1


# ---------------------------------------------------------------------------- records, by bytes
# The largest record a loader reads (its bytes, quoted newlines included). A longer record is not
# read: news quarantines it with its size, a price file is an error. FNSPID's longest article is a
# few hundred KB; a daily bar is under 200 bytes.
MAX_NEWS_RECORD_BYTES = 8 << 20  # 8 MiB
MAX_PRICE_RECORD_BYTES = 64 << 10  # 64 KiB
MAX_RAGGED = 100_000  # more records unlike the header than this: the file is not that CSV
SCAN_CHUNK = 1 << 22  # 4 MiB

csv.field_size_limit(max(csv.field_size_limit(), MAX_NEWS_RECORD_BYTES))  # a field may be as long as a record


class Records:
    """What :func:`scan_records` found: the header's field count, the number of records (header and
    blank records included), and the records (by index, 0 = header) that are ragged (a field count
    unlike the header's; blank records are not) or longer than the limit (their start byte and length)."""

    def __init__(self, header_fields: int, count: int, ragged: dict[int, int], oversized: dict[int, tuple[int, int]]):
        self.header_fields = header_fields
        self.count = count
        self.ragged = ragged
        self.oversized = oversized


def scan_records(path: Path, max_record_bytes: int) -> Records:
    """Record boundaries and field counts of a CSV from its bytes (RFC 4180: a newline or comma
    inside double quotes belongs to the field), in chunks of :data:`SCAN_CHUNK` bytes with numpy, so
    memory stays bounded by the chunk whatever a record's size.

    Raises
    ------
    SourceError
        The header record is longer than ``max_record_bytes`` (a file without line breaks), a line
        ends with a CR alone outside quotes (classic Mac line ends), or more than :data:`MAX_RAGGED`
        records are ragged.
    """
    from .base import SourceError

    st = _ScanState()
    with open(path, "rb") as fh:
        while chunk := fh.read(SCAN_CHUNK):
            st.feed(np.frombuffer(chunk, dtype=np.uint8), max_record_bytes, path)
    st.finish(path.stat().st_size, max_record_bytes, path)
    if st.count == 0:
        raise SourceError(f"{path.name}: empty file (no header line)")
    return Records(st.header_fields or 0, st.count, st.ragged, st.oversized)


class _ScanState:
    """Carries the quote parity and the open record across chunks for :func:`scan_records`."""

    def __init__(self) -> None:
        self.parity = 0  # quotes seen so far, mod 2 (1: inside a quoted field)
        self.start = 0  # byte where the open record starts
        self.commas = 0  # commas outside quotes in the open record so far
        self.base = 0  # byte offset of the current chunk
        self.prev = 0  # the byte before the current chunk
        self.count = 0  # records closed so far
        self.header_fields: int | None = None
        self.ragged: dict[int, int] = {}
        self.oversized: dict[int, tuple[int, int]] = {}
        self.lines = 0  # LF bytes before the current chunk
        self.cr_open = False  # the chunk before ended with a CR outside quotes

    def feed(self, b: np.ndarray, limit: int, path: Path) -> None:
        quotes = np.cumsum(b == 34, dtype=np.int64)
        outside = ((quotes + self.parity) & 1) == 0
        self._bare_cr(b, outside, path)
        nl = np.flatnonzero((b == 10) & outside)
        cm = np.flatnonzero((b == 44) & outside)
        if nl.size:
            ends = nl + self.base
            starts = np.concatenate(([self.start], ends[:-1] + 1))
            k = np.searchsorted(cm, nl)
            fields = np.diff(np.concatenate(([0], k))) + 1
            fields[0] += self.commas
            lengths = ends - starts + 1
            before = np.where(nl > 0, b[np.maximum(nl - 1, 0)], self.prev)
            content = lengths - 1 - ((before == 13) & (lengths >= 2))
            self._close(fields, lengths, starts, content == 0, limit, path)
            self.start = int(ends[-1]) + 1
            self.commas = int(cm.size - k[-1])
        else:
            self.commas += int(cm.size)
        self.parity = int((self.parity + int(quotes[-1])) & 1)
        self.base += int(b.size)
        self.prev = int(b[-1])
        if self.count == 0 and self.base - self.start > limit:
            self._header_too_long(limit, path)

    def _bare_cr(self, b: np.ndarray, outside: np.ndarray, path: Path) -> None:
        """A SourceError at the first CR outside quotes that no LF follows: a line end that is a CR
        alone (classic Mac), which Python's ``csv`` module ends a record at and polars does not."""
        if self.cr_open and b[0] != 10:
            self._cr_error(self.base - 1, path)
        cr = np.flatnonzero((b == 13) & outside)
        self.cr_open = bool(cr.size) and int(cr[-1]) == b.size - 1
        inner = cr[cr < b.size - 1]
        bare = inner[b[inner + 1] != 10]
        if bare.size:
            self._cr_error(self.base + int(bare[0]), path, int(np.count_nonzero(b[: bare[0]] == 10)))
        self.lines += int(np.count_nonzero(b == 10))

    def _cr_error(self, pos: int, path: Path, lf_before: int = 0):
        from .base import SourceError

        raise SourceError(
            f"{path.name}: line {self.lines + lf_before + 1}: CR line ends (classic Mac: a CR without LF outside quotes, "
            f"at byte {pos:,}), which readers split into records differently: re-save the file with LF or CRLF line ends"
        )

    def finish(self, size: int, limit: int, path: Path) -> None:
        if self.cr_open:
            self._cr_error(size - 1, path)
        if self.start < size:  # a last record without a line break
            length = size - self.start
            blank = length == 1 and self.prev == 13
            self._close(np.array([self.commas + 1]), np.array([length]), np.array([self.start]), np.array([blank]), limit, path)

    def _close(self, fields, lengths, starts, blank, limit: int, path: Path) -> None:
        from .base import SourceError

        first = self.count
        if first == 0:
            if lengths[0] > limit:
                self._header_too_long(limit, path)
            self.header_fields = int(fields[0])
        idx = np.arange(first, first + fields.size)
        data = idx > 0
        big = data & (lengths > limit)
        odd = data & ~big & ~blank & (fields != self.header_fields)
        for i in np.flatnonzero(big):
            self.oversized[int(idx[i])] = (int(starts[i]), int(lengths[i]))
        for i in np.flatnonzero(odd):
            self.ragged[int(idx[i])] = int(fields[i])
        if len(self.ragged) > MAX_RAGGED:
            raise SourceError(
                f"{path.name}: more than {MAX_RAGGED:,} records have a field count unlike the header's "
                f"({self.header_fields}): not a comma-separated file with this header (another delimiter?)"
            )
        self.count += int(fields.size)

    def _header_too_long(self, limit: int, path: Path):
        from .base import SourceError

        raise SourceError(
            f"{path.name}: no line break within the first {limit:,} bytes, so no header line: a file without line breaks cannot be read as CSV"
        )


def blank_records(path: Path, records: Records, out: Path) -> None:
    """Copy ``path`` to ``out`` with each oversized record replaced by an empty record of the
    header's width (so row numbers stay those of the source), streaming in :data:`SCAN_CHUNK` bytes."""
    empty = b"," * (records.header_fields - 1) + b"\n"
    with open(path, "rb") as src, open(out, "wb") as dst:
        pos = 0
        for _, (start, length) in sorted(records.oversized.items(), key=lambda kv: kv[1][0]):
            _copy_span(src, dst, pos, start)
            dst.write(empty)
            pos = start + length
        _copy_span(src, dst, pos, None)


def _copy_span(src, dst, start: int, stop: int | None) -> None:
    src.seek(start)
    left = None if stop is None else stop - start
    while left is None or left > 0:
        b = src.read(SCAN_CHUNK if left is None else min(SCAN_CHUNK, left))
        if not b:
            return
        dst.write(b)
        if left is not None:
            left -= len(b)
