"""Secret redaction for everything finrag prints or posts: reader errors, alerts, logs.

:func:`redact_secrets` removes the key shapes it knows (bearer and basic tokens, ``sk-`` keys,
``api_key=``-style values) and every form of the given secret values a server may echo (as is,
URL-escaped, JSON-escaped, base64-encoded).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

REDACTED = "[REDACTED]"
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)(?!\[REDACTED\])[^\s\"',;}\]]+")
_SK = re.compile(r"\bsk-[A-Za-z0-9_\-]{4,}")
_KV = re.compile(r"(?i)\b(api[_-]?key|access[_-]?token|x-api-key|secret|password)(\"?\s*[=:]\s*\"?)(?!\[REDACTED\])([^\s\"'&,;}\]]+)")


def secret_forms(secret: str) -> set[str]:
    """Every way a server may echo ``secret`` back: as is, URL-quoted (``/`` kept or quoted, ``+``
    for spaces), JSON-escaped (with ``/`` as ``\\/`` too, as PHP and some proxies write it, and with
    every character as ``\\uXXXX``)."""
    js = json.dumps(secret)[1:-1]
    return {
        secret,
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret, safe=""),
        js,
        js.replace("/", "\\/"),
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1].replace("/", "\\/"),
        "".join(f"\\u{ord(c):04x}" for c in secret),
        "".join(f"\\u{ord(c):04X}" for c in secret),
    }


_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{8,}={0,2}")


def base64_cores(secret: str) -> set[str]:
    """The base64 text (standard and URL-safe alphabets) that ``secret``'s bytes alone decide, at each
    of the three byte offsets it can start at: found inside the base64 of any ``user:secret`` (HTTP
    Basic), ``:secret`` or the secret alone. Cores under 8 characters are left out (too short to say
    it is the secret)."""
    raw, out = secret.encode(), set()
    for offset in range(3):
        enc = base64.b64encode(b"\0" * offset + raw).decode()
        core = enc[4 * -(-offset // 3) : 4 * ((offset + len(raw)) // 3)]  # whole groups of the secret's bytes only
        if len(core) >= 8:
            out |= {core, core.replace("+", "-").replace("/", "_")}
    return out


def redact_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret replaced by ``[REDACTED]``.

    Replaced: each value in ``secrets`` in each form of :func:`secret_forms`, any base64 run that
    encodes it (:func:`base64_cores`: alone, or in ``user:secret``), ``Bearer <token>`` /
    ``Basic <token>``, ``sk-…`` keys and ``api_key=…`` / ``"api_key": "…"``-style values. Call it on
    the whole text *before* truncating, so a cut cannot leave a key's prefix behind.
    """
    if not text:
        return text
    secrets = [sec for sec in secrets if sec]
    forms = set()
    for sec in secrets:
        forms |= secret_forms(sec)
    for f in sorted(forms, key=len, reverse=True):
        text = text.replace(f, REDACTED)
    cores = set().union(*(base64_cores(sec) for sec in secrets))
    if cores:  # a base64 run holding a secret's bytes (an echoed Basic credential) goes whole
        text = _B64_RUN.sub(lambda m: REDACTED if any(c in m.group(0) for c in cores) else m.group(0), text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _SK.sub(REDACTED, text)
    return _KV.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
