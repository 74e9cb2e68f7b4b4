"""Text helpers shared by evidence building, deduplication and retrieval."""

from __future__ import annotations

import re
import unicodedata

_WS = re.compile(r"\s+")
_NON_WORD = re.compile(r"[^\w\s%$.]+", re.UNICODE)
_TITLE_NOISE = re.compile(r"[^a-z0-9 ]+")
_TOKEN = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*%?")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def clean(text: str | None) -> str:
    """Unicode-normalised text with collapsed whitespace."""
    if not text:
        return ""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def title_key(title: str | None) -> str:
    """Normalised title used for title-duplicate removal (case, punctuation, spacing ignored)."""
    t = unicodedata.normalize("NFKD", title or "").encode("ascii", "ignore").decode().lower()
    return _WS.sub(" ", _TITLE_NOISE.sub(" ", t)).strip()


def tokens(text: str | None) -> list[str]:
    """Lower-case word tokens (numbers with decimals and % kept whole)."""
    return _TOKEN.findall((text or "").lower())


def shingles(text: str | None, k: int = 3) -> set[bytes]:
    """Word k-shingles for MinHash (a short text yields its whole token string)."""
    toks = tokens(text)
    if len(toks) < k:
        return {" ".join(toks).encode()} if toks else set()
    return {" ".join(toks[i : i + k]).encode() for i in range(len(toks) - k + 1)}


def sentences(text: str | None) -> list[str]:
    return [s.strip() for s in _SENT.split(clean(text)) if s.strip()]


def truncate_chars(text: str, limit: int) -> str:
    """Cut at a word boundary at or below ``limit`` characters."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + " …"


def stable_hash(*parts: object, n: int = 16) -> str:
    """Deterministic hex digest of the parts (sha1, first ``n`` chars)."""
    import hashlib

    return hashlib.sha1("\x1f".join("" if p is None else str(p) for p in parts).encode("utf-8")).hexdigest()[:n]


def _english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop-word list (``ENGLISH_STOP_WORDS``), read from its own module file
    without importing the ``sklearn`` package: that import costs about a second, which every
    `finrag search` would pay for one frozenset."""
    import importlib.util

    spec = importlib.util.find_spec("sklearn")
    path = next(iter(spec.submodule_search_locations)) + "/feature_extraction/_stop_words.py"
    mod_spec = importlib.util.spec_from_file_location("_finrag_sklearn_stop_words", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return frozenset(mod.ENGLISH_STOP_WORDS)


ENGLISH_STOP_WORDS = _english_stop_words()
