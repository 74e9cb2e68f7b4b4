"""Where a CSV file breaks: the line a malformed record starts on, for errors that name it.

Both checks stream the file in bounded chunks, so a many-gigabyte FNSPID dump is checked in a
few megabytes of memory.
"""

from __future__ import annotations

import codecs
import csv
import io
from pathlib import Path

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
