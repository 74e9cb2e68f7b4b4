"""Writing a file so that a crash leaves the previous version: a temporary file in the same
folder, flushed and fsynced, then ``os.replace`` (atomic on POSIX); removed again on any error."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

_UMASK = os.umask(0)
os.umask(_UMASK)
PLAIN = 0o666 & ~_UMASK  # what open() would have given the file (mkstemp gives 0600)


@contextmanager
def atomic_file(
    path: str | os.PathLike, prefix: str | None = None, suffix: str = ".tmp", fsync: bool = True, mode: int | None = None
) -> Iterator[BinaryIO]:
    """``with atomic_file(p) as fh: fh.write(...)``: ``p`` holds the new bytes only once the block
    has finished without an error. ``mode``: the file's permission bits (default: mkstemp's 0600)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=prefix if prefix is not None else f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
