"""Filing text split into item passages ("Item 2.02", "Item 1A", "Exhibit 99.1"), chunked on sentence
boundaries; table-of-contents headings are not section boundaries.
"""

from __future__ import annotations

import re

_HEADING = re.compile(
    r"^[ \t>#*_]*(?:part\s+(?P<part>iv|i{1,3})\b[ \t,.:;—–\-]*)?item\s+(?P<num>\d{1,2}(?:\.\d{1,2})?[a-d]?)\b\.?"
    r"(?P<rest>[^\n]*)$|^[ \t]*(?P<ex>EX-99\.1)[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
_PART = re.compile(r"^[ \t>#*_]*part\s+(iv|i{1,3})\b(?![^\n]*\bitem\s+\d)", re.IGNORECASE | re.MULTILINE)
_TABLE_RULE = re.compile(r"^[\s|:\-]*$")
_PART_LINE = re.compile(r"(?i:part)\s+(?:IV|I{1,3})\b[\s.:—–\-]*(?:[A-Z][A-Z ,&]*)?")
_PIPES = re.compile(r"[ \t]*(?:\|[ \t]*)+")
_SENT_SPLIT = re.compile(r"(?<=[.!?;])\s+(?=[\"'“(\[]?[A-Z0-9])")


def _clean_block(text: str) -> str:
    """Drop markdown table rules and PART lines, collapse cell separators; one line per paragraph."""
    out = []
    for ln in text.split("\n"):
        if "|" in ln:
            if _TABLE_RULE.match(ln):
                continue
            ln = _PIPES.sub(" | ", ln).strip(" |")
        ln = re.sub(r"[ \t]+", " ", ln).strip()
        if ln and not _PART_LINE.fullmatch(ln):  # "PART II — OTHER INFORMATION": structure, not content
            out.append(ln)
    return "\n".join(out)


def _words(text: str) -> int:
    return len(text.split())


def _chunk(text: str, max_words: int) -> list[str]:
    """Consecutive chunks of at most ``max_words`` words, cut on sentence boundaries when possible."""
    units: list[str] = []
    for para in text.split("\n"):
        for sent in _SENT_SPLIT.split(para):
            w = sent.split()
            while len(w) > max_words:  # a run-on "sentence" (tables): cut on words
                units.append(" ".join(w[:max_words]))
                w = w[max_words:]
            if w:
                units.append(" ".join(w))
    chunks, cur, n = [], [], 0
    for u in units:
        k = _words(u)
        if cur and n + k > max_words:
            chunks.append(" ".join(cur))
            cur, n = [], 0
        cur.append(u)
        n += k
    if cur:
        chunks.append(" ".join(cur))
    return chunks


def _item_label(num: str) -> str:
    """ "1a" -> "Item 1A", "2.02" -> "Item 2.02"."""
    return "Item " + num.upper()


def split_filing_passages(text: str, form_type: str, max_words: int = 160) -> list[dict]:
    """Split filing text into item passages.

    Parameters
    ----------
    text : str
        Plain or markdown filing text.
    form_type : str
        "8-K", "10-Q", "10-K" (amendments too).
    max_words : int
        Longest passage, in words.

    Returns
    -------
    list of dict
        ``{"item", "text", "part"}`` in document order. ``item`` is "Item 2.02", "Item 1A", ...,
        "Cover" for text before the first heading, "Exhibit 99.1" for an 8-K press release;
        ``part`` is "I".."IV" when a PART heading precedes the item (10-Q items repeat across
        parts), else None. A heading that recurs later with the same part and item is a
        table-of-contents entry and does not start a section. Sections whose body has fewer than
        5 words ("None.") are dropped, long ones are chunked on sentence boundaries, and any
        passage under 5 words is dropped.
    """
    if not text or not text.strip():
        return []
    max_words = max(5, int(max_words))
    parts = [(m.start(), m.group(1).upper()) for m in _PART.finditer(text)]
    heads = []  # (match, item label, part)
    for m in _HEADING.finditer(text):
        if m.group("ex"):
            heads.append((m, "Exhibit 99.1", None))
            continue
        part = (m.group("part") or "").upper() or next((p for pos, p in reversed(parts) if pos < m.start()), None)
        heads.append((m, _item_label(m.group("num")), part))
    # a heading repeated later (same part and item) is a table-of-contents entry: not a boundary
    last = {(it, pt): i for i, (_, it, pt) in enumerate(heads)}
    heads = [h for i, h in enumerate(heads) if last[(h[1], h[2])] == i]
    bounds = [0] + [m.start() for m, _, _ in heads] + [len(text)]
    out: list[dict] = []
    for i in range(len(bounds) - 1):
        seg = text[bounds[i] : bounds[i + 1]]
        if i == 0:
            item, part, heading, body = "Cover", None, "", seg
        else:
            m, item, part = heads[i - 1]
            heading = seg[: seg.find("\n")] if "\n" in seg else seg
            body = seg[len(heading) :]
            if m.group("ex") or _words(heading) > 25:  # marker line, or heading run into its paragraph
                heading, body = "", (body if m.group("ex") else seg)
        body = _clean_block(body)
        if _words(body) < 5:
            continue
        section = (_clean_block(heading) + "\n" + body).strip() if heading else body
        for chunk in _chunk(section, max_words):
            if _words(chunk) >= 5:
                out.append({"item": item, "text": chunk, "part": part})
    return out
