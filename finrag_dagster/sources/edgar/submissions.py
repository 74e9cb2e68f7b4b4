"""SEC submissions JSON (``CIK##########.json``, ``filings.recent`` or an overflow page) -> records.

A file that contradicts itself (arrays of unequal length, a cik that is not its file name's, a key
given twice) is never read silently (docs/bad_inputs.md, "Filings (EDGAR)").
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..base import SourceError, bom_encoding
from .constants import NEEDED_ARRAYS, R_CIK_VS_FILE, R_MISSING_ARRAYS, R_UNEQUAL_ARRAYS
from .records import FilingRecord, _acceptance_ns, _date, _norm_accession, _utc_ns


def _json_text(path: Path) -> str:
    """A submissions JSON's text: UTF-8, or the encoding its byte-order mark names (both unambiguous).

    Raises
    ------
    SourceError
        Bytes that are not UTF-8 (a Latin-1 or Windows-1252 export): never guessed.
    """
    data = path.read_bytes()
    enc = bom_encoding(data)
    try:
        return data.decode(enc or "utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"{path.name}: not {'UTF-8' if enc is None else enc.upper()} text (byte 0x{data[exc.start]:02x} at offset {exc.start:,}; "
            "Latin-1 or Windows-1252?): save it as UTF-8"
        ) from None


def _unique_keys(path: Path):
    """A ``json.loads`` hook that refuses a key given twice with different values (``json`` keeps the last)."""

    def hook(pairs: list[tuple[str, object]]) -> dict:
        out: dict = {}
        for k, v in pairs:
            if k in out and out[k] != v:
                raise SourceError(f"{path.name}: key {k!r} given twice with different values (which one is meant cannot be told): fix the file")
            out[k] = v
        return out

    return hook


def read_submissions_json(path: Path, file_index: int) -> list[FilingRecord]:
    """Records of a submissions JSON (``filings.recent``, or an overflow page's top-level arrays)."""
    try:
        doc = json.loads(_json_text(path), object_pairs_hook=_unique_keys(path))
    except json.JSONDecodeError as exc:
        raise SourceError(f"{path.name}: not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise SourceError(f"{path.name}: not an SEC submissions JSON")
    block = doc.get("filings", {}).get("recent") if isinstance(doc.get("filings"), dict) else None
    if block is None and "accessionNumber" in doc:
        block = doc
    if not isinstance(block, dict) or "accessionNumber" not in block:
        raise SourceError(f"{path.name}: not an SEC submissions JSON (no filings.recent.accessionNumber)")
    cik_i, cik_conflict = _json_cik(doc, path.name)
    tickers = [str(t).strip().upper() for t in doc.get("tickers") or [] if t and str(t).strip()]
    fye = doc.get("fiscalYearEnd")
    n = len(block["accessionNumber"])
    lengths = {k: len(v) for k, v in block.items() if isinstance(v, list)}
    short = {k: m for k, m in lengths.items() if m != n}
    if short:
        # parallel arrays that do not line up cannot be zipped: a time would go to another filing
        why = f"{R_UNEQUAL_ARRAYS} (accessionNumber {n}, " + ", ".join(f"{k} {m}" for k, m in sorted(short.items())) + ")"
        return _json_problem_records(block, path, file_index, cik_i, why)
    missing = [k for k in NEEDED_ARRAYS if not isinstance(block.get(k), list)]
    if missing:  # not one filing of this file has a form, a time or a date: say that, not "form not used" on each
        return _json_problem_records(block, path, file_index, cik_i, f"{R_MISSING_ARRAYS}: {', '.join(missing)}")
    if cik_conflict:  # whose filings these are is in doubt: none of them is used
        return _json_problem_records(block, path, file_index, cik_i, cik_conflict)
    names = _former_names(doc)
    own_names = tuple(n for n in [doc.get("name"), *(f[2] for f in names)] if isinstance(n, str) and n.strip())

    def arr(key: str) -> list:
        v = block.get(key)
        return list(v) if isinstance(v, list) else [None] * n

    out = []
    for i, (acc, form, acc_t, filed, rep, items) in enumerate(
        zip(arr("accessionNumber"), arr("form"), arr("acceptanceDateTime"), arr("filingDate"), arr("reportDate"), arr("items"), strict=True)
    ):
        accepted, date_only = _acceptance_ns(acc_t)
        out.append(
            FilingRecord(
                accession=_norm_accession(acc),
                source="submissions_json",
                source_file=path.name,
                source_row=i,
                file_index=file_index,
                form_type=(form or "").strip() or None,
                cik=cik_i,
                company=_name_at(names, doc.get("name"), accepted),
                ticker=(tickers[0] if tickers else None),
                tickers=tuple(tickers),
                names=own_names,
                accepted_ns=accepted,
                date_only=date_only,
                filed_date=_date(filed),
                report_date=_date(rep),
                items=(items or "").strip(),
                fye=fye if isinstance(fye, str) and re.fullmatch(r"\d{4}", fye) else None,
            )
        )
    return out


def _json_cik(doc: dict, file_name: str) -> tuple[int | None, str | None]:
    """A submissions JSON's CIK (its ``cik`` field, else its file name's) and why, if the two disagree."""
    m = re.search(r"CIK0*(\d+)", file_name, re.IGNORECASE)
    from_name = int(m.group(1)) if m else None
    field = str(doc.get("cik") or "").strip()
    from_field = int(field) if field.isdigit() else None
    if from_name is not None and from_field is not None and from_name != from_field:
        why = (
            f"{R_CIK_VS_FILE}: cik {from_field} in the file, CIK {from_name} in its name {file_name} "
            "(none of its filings is used: re-download it or fix the name)"
        )
        return from_field, why
    return (from_field if from_field is not None else from_name), None


def _json_problem_records(block: dict, path: Path, file_index: int, cik: int | None, why: str) -> list[FilingRecord]:
    """One unusable record per accession of a submissions JSON, each quarantined with ``why``."""
    return [
        FilingRecord(
            accession=_norm_accession(acc),
            source="submissions_json",
            source_file=path.name,
            source_row=i,
            file_index=file_index,
            cik=cik,
            problem=why,
        )
        for i, acc in enumerate(block["accessionNumber"])
    ]


def _former_names(doc: dict) -> list[tuple[int, int, str]]:
    """(from ns, to ns, name) of a submissions JSON's ``formerNames`` (the end of ``to``'s day)."""
    out = []
    for f in doc.get("formerNames") or []:
        if not isinstance(f, dict) or not f.get("name"):
            continue
        lo, hi = _utc_ns(f.get("from")), _utc_ns(f.get("to"))
        if lo is None or hi is None:
            continue
        out.append((lo, hi + 86_400 * 10**9 - 1, str(f["name"]).strip()))
    return sorted(out)


def _name_at(former: list[tuple[int, int, str]], current: str | None, t_ns: int | None) -> str | None:
    """The company's name when it filed: a former name whose dates cover ``t_ns``, else today's."""
    if t_ns is not None:
        hits = [name for lo, hi, name in former if lo <= t_ns <= hi]
        if hits:
            return hits[-1]
    return current
