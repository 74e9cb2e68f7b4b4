"""Where a CSV file breaks: the line a malformed record starts on, for errors that name it."""

from __future__ import annotations

import csv
import io
from pathlib import Path


def csv_problem(path: Path, limit_bytes: int | None = None) -> str | None:
    """``"line N: <what>"`` for the first malformed record of a CSV, or None when it parses.

    Reads with Python's ``csv`` module in strict mode (RFC 4180 quoting): an unterminated quote,
    a stray quote inside an unquoted field, or a NUL byte is reported at the line where its
    record starts.
    """
    data = path.read_bytes() if limit_bytes is None else path.read_bytes()[:limit_bytes]
    text = data.decode("utf-8", errors="replace")
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        return f"line {line}: NUL byte (a binary or corrupt file)"
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
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
