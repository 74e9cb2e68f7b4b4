"""sec-edgar-downloader ``<TICKER>/<FORM>/<ACCESSION>/full-submission.txt`` -> one record.

Its header always, its body text when asked; a file naming two accessions is unusable, a truncated
one or a header giving a field twice quarantines its filing (docs/bad_inputs.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..base import SourceError, bom_encoding
from .body import submission_text
from .constants import MAX_SUBMISSION_BYTES, R_HEADER_TWICE, R_TRUNCATED, R_TWO_ACCESSIONS
from .header import _whole_lines, parse_submission_header
from .records import FilingRecord, _norm_accession


def read_full_submission(path: Path, file_index: int, with_text: bool) -> list[FilingRecord]:
    """One record from a ``full-submission.txt`` (header always; body text when ``with_text``).

    A file naming two accessions (its folder's and its header's) is unusable; a truncated one
    quarantines its filing (``conflict``).
    """
    size = path.stat().st_size
    if size > MAX_SUBMISSION_BYTES:
        raise SourceError(f"{path}: {size:,} bytes, over the {MAX_SUBMISSION_BYTES:,}-byte limit for one submission (not read)")
    data = path.read_bytes()
    enc = bom_encoding(data)  # UTF-16 text has NUL bytes: read as its byte-order mark says, not as binary
    if enc is None and b"\x00" in data[:65536]:
        raise SourceError(f"{path}: a binary or corrupt file (NUL bytes), not an EDGAR SGML submission")
    raw = data.decode(enc or "utf-8", errors="replace")
    if "\n" not in raw[:5000] and "\r" in raw[:5000]:
        raw = raw.replace("\r", "\n")  # old Mac line ends (CR alone): the header is read line by line
    if "<SEC-HEADER>" not in raw[:5000] and "ACCESSION NUMBER:" not in raw[:5000]:
        raise SourceError(f"{path}: not an EDGAR SGML submission (no <SEC-HEADER>)")
    h = parse_submission_header(raw)
    # sec-edgar-downloader layout: <TICKER>/<FORM>/<ACCESSION>/full-submission.txt
    ticker = path.parent.parent.parent.name.upper() if len(path.parts) >= 4 else None
    acc = _norm_accession(h["accession"]) or _norm_accession(path.parent.name)
    two = _two_accessions(path, h, raw)
    label = f"{path.parent.name if two else (acc or path.parent.name)}/{path.name}"
    return [
        FilingRecord(
            accession=acc,
            source="sgml_header",
            source_file=label,
            source_row=0,
            file_index=file_index,
            form_type=h["form_type"],
            cik=h["cik"],
            company=h["company"],
            ticker=ticker,
            tickers=(ticker,) if ticker and _downloader_layout(path, h["form_type"]) else (),
            names=(h["company"],) if h["company"] else (),
            accepted_ns=int(h["acceptance_utc"].value) if h["acceptance_utc"] is not None else None,
            filed_date=h["filed_date"],
            report_date=h["period_of_report"],
            items=h["items"],
            fye=h["fiscal_year_end"],
            text=submission_text(raw, h["form_type"] or "") if with_text else "",
            problem=two,
            conflict=_truncation(raw, label) or (f"{R_HEADER_TWICE}: {h['repeated']} in {label} (re-download it)" if h["repeated"] else None),
        )
    ]


_SECDOC_TOKEN = re.compile(r"<SEC-DOCUMENT>[ \t]*(\S+)")
_DOC_OPEN = re.compile(r"<DOCUMENT>", re.IGNORECASE)
_DOC_CLOSE = re.compile(r"</DOCUMENT>", re.IGNORECASE)
_DOC_COUNT = re.compile(r"^[ \t]*PUBLIC DOCUMENT COUNT:[ \t]*(\d+)", re.MULTILINE)


def _two_accessions(path: Path, h: dict, raw: str) -> str | None:
    """Why a ``full-submission.txt`` is unusable when its folder, ``ACCESSION NUMBER`` and ``<SEC-DOCUMENT>`` disagree."""
    end = raw.find("</SEC-HEADER>")
    m = _SECDOC_TOKEN.search(raw[:end] if end >= 0 else _whole_lines(raw))
    named = {
        "folder": _norm_accession(path.parent.name),
        "ACCESSION NUMBER": _norm_accession(h["accession"]),
        "<SEC-DOCUMENT>": _norm_accession(m.group(1)) if m else None,
    }
    named = {k: v for k, v in named.items() if v}
    if len(set(named.values())) <= 1:
        return None
    said = ", ".join(f"{k} {v}" for k, v in named.items())
    return f"{R_TWO_ACCESSIONS}: {said} in {path.parent.name}/{path.name}; the file belongs to one filing: re-download it"


def _downloader_layout(path: Path, form_type: str | None) -> bool:
    """Whether ``path`` sits in ``<TICKER>/<FORM>/<ACCESSION>/``, FORM being the header's form (amendments in their base form's folder)."""
    if len(path.parts) < 4 or _norm_accession(path.parent.name) is None:
        return False
    form = (form_type or "").strip().upper()
    return path.parent.parent.name.upper() in {form, form.removesuffix("/A")}


def _truncation(raw: str, label: str) -> str | None:
    """Why a ``full-submission.txt`` with a body is cut short, or None: every ``<DOCUMENT>`` closed, as
    many as its header's PUBLIC DOCUMENT COUNT, then ``</SEC-DOCUMENT>``. A file without a
    ``<DOCUMENT>`` is a header when it does not open with ``<SEC-DOCUMENT>`` (EDGAR's ``.hdr.sgml``)
    or stops inside its header (the real sample's first 1,000 bytes): not checked."""
    end = raw.find("</SEC-HEADER>")
    body = raw[end:] if end >= 0 else raw
    opened = len(_DOC_OPEN.findall(body))
    if opened == 0 and (end < 0 or not raw[:200].lstrip().startswith("<SEC-DOCUMENT>")):
        return None
    closed = min(opened, len(_DOC_CLOSE.findall(body)))
    m = _DOC_COUNT.search(raw[:end] if end >= 0 else raw)
    declared = int(m.group(1)) if m else None
    why = []
    if declared is not None and closed < declared:
        why.append(f"{closed} of {declared} declared documents")
    if opened > closed:
        why.append(f"<DOCUMENT> {closed + 1} not closed")
    if body.rfind("</SEC-DOCUMENT>") < max(body.rfind("</DOCUMENT>"), 0):
        why.append("no </SEC-DOCUMENT> after its last document")
    if not why:
        return None
    return f"{R_TRUNCATED}: " + ", ".join(why) + f" in {label} (re-download it)"
