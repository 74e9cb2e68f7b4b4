"""Where a lake is: a local folder or an object-store URI (no heavy imports: the settings use it)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def is_remote(location: str | os.PathLike) -> bool:
    """Whether a lake location is an object-store URI (``s3://…``, ``gs://…``) rather than a folder."""
    return "://" in str(location) and not str(location).startswith("file://")


def default_work_dir(uri: str) -> Path:
    """The local working folder of a remote lake when none is given: under the user's cache."""
    tag = hashlib.sha256(uri.encode()).hexdigest()[:12]
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in uri.split("://", 1)[1].split("?", 1)[0])[:80]
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "finrag" / f"{name}-{tag}"
