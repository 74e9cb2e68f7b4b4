"""The records of one accession merged into one filing: ``public_time`` is the latest known acceptance
time; a filing that fails a check (form, ticker, time, a source contradicting itself or the
universe, acceptance vs filing date) is quarantined. Duplicate entries of one submissions JSON are
dropped first, the later acceptance time kept (docs/bad_inputs.md, docs/time.md).
"""

from __future__ import annotations

import datetime as dt
import re

import pandas as pd

from ..universe import company_aliases
from .constants import (
    ACCEPTANCE_BEFORE_FILED_MAX_DAYS,
    FORMS_USED,
    R_ACCEPTANCE_VS_FILED,
    R_DUPLICATE,
    R_FORM,
    R_NO_ACCESSION,
    R_NO_TICKER,
    R_NO_TIME,
    R_OUT_OF_CALENDAR,
    R_TICKER_VS_SOURCE,
)
from .periods import _MONTHS
from .records import FilingRecord


def _first(values):
    return next((v for v in values if v not in (None, "")), None)


def _tkey(ticker: str) -> str:
    """A ticker compared without case or punctuation (BRK.B = BRK-B)."""
    return re.sub(r"[^A-Z0-9]", "", str(ticker).upper())


def _ticker_vs_sources(cik, ticker: str, g: list[FilingRecord], by_cik, names: dict[str, set[str]]) -> str | None:
    """Why the universe's ticker for the filing's CIK contradicts a source's own tickers, or None: a
    source must name one of the CIK's universe tickers, or (a renamed ticker) the ticker's company."""
    cands = by_cik.get(cik, []) if cik is not None else []
    if not cands:
        return None  # the ticker came from a source itself
    keys = {_tkey(t) for t in cands}
    for r in g:
        if not r.tickers or keys & {_tkey(t) for t in r.tickers}:
            continue
        own = {a for n in r.names for a in company_aliases(n).split("|") if a}
        if own & names.get(ticker, set()):
            continue
        said = ", ".join(r.tickers) + (f" ({r.names[0]})" if r.names else "")
        return (
            f"{R_TICKER_VS_SOURCE}: the universe gives CIK {cik} to {', '.join(cands)}, {r.source_file} names itself {said}; "
            "fix the universe's cik column or the source"
        )
    return None


def _record_conflict(g: list[FilingRecord]) -> str | None:
    """The first contradiction a record of the filing has with itself (a truncated submission)."""
    return _first(r.conflict for r in g)


def _pick_ticker(cik: int | None, src_tickers: list[str], by_cik, universe_set) -> str | None:
    """Ticker of a CIK in the universe (a source's ticker breaks ties, e.g. GOOG/GOOGL)."""
    cands = by_cik.get(cik, []) if cik is not None else []
    src = sorted({(t or "").upper() for t in src_tickers if t})
    if cands:
        hit = [t for t in src if t in cands]
        return hit[0] if hit else cands[0]
    hit = [t for t in src if t in universe_set]
    return hit[0] if hit else None


def _shown_time(r: FilingRecord) -> str:
    """A record's acceptance time as a reason shows it: a date only as written, else UTC ISO."""
    if r.accepted_ns is None:
        return "no acceptance time"
    return r.date_only or pd.Timestamp(r.accepted_ns, tz="UTC").isoformat()


def _json_duplicates(records: list[FilingRecord]) -> tuple[list[FilingRecord], list[dict]]:
    """The records without the second entries of an accession in one submissions JSON, and a
    quarantine row for each entry left out. Of the entries, the one with the latest acceptance time is
    kept (a time before none; equal times: the first row): it never lets a decision see the filing early.
    (An index parquet may give one filing per acceptance source and ticker: only JSONs are checked.)"""
    by_key: dict[tuple[int, str], list[FilingRecord]] = {}
    for r in records:
        if r.source == "submissions_json" and r.problem is None and r.accession is not None:
            by_key.setdefault((r.file_index, r.accession), []).append(r)
    left_out: set[int] = set()
    q_rows: list[dict] = []
    for (_, acc), rs in by_key.items():
        if len(rs) < 2:
            continue
        keep = max(rs, key=lambda r: (r.accepted_ns is not None, r.accepted_ns or 0, -r.source_row))
        for r in rs:
            if r is keep:
                continue
            left_out.add(id(r))
            if r.accepted_ns == keep.accepted_ns:
                why = f"the same acceptance time {_shown_time(keep)}: row {keep.source_row} is kept"
            else:
                why = (
                    f"acceptance times {_shown_time(keep)} (row {keep.source_row}) and {_shown_time(r)} (row {r.source_row}): "
                    f"row {keep.source_row}, the later, is kept, so no decision sees the filing early"
                )
            q_rows.append(
                {
                    "source_file": r.source_file,
                    "source_row": r.source_row,
                    "reason": f"{R_DUPLICATE}: {acc} at rows {keep.source_row} and {r.source_row} of {r.source_file}, {why}",
                    "raw": {"accession": acc, "form_type": r.form_type, "acceptance_time": _shown_time(r), "source": r.source},
                }
            )
    return [r for r in records if id(r) not in left_out], q_rows


def _group_records(records: list[FilingRecord]) -> tuple[list[dict], dict[str, list[FilingRecord]]]:
    """Quarantine rows of records with a problem or no accession, and the other records by accession."""
    q_rows: list[dict] = []
    groups: dict[str, list[FilingRecord]] = {}
    for r in records:
        if r.problem is not None:
            q_rows.append(
                {
                    "source_file": r.source_file,
                    "source_row": r.source_row,
                    "reason": r.problem,
                    "raw": {"accession": r.accession, "cik": r.cik, "source": r.source},
                }
            )
        elif r.accession is None:
            q_rows.append(
                {
                    "source_file": r.source_file,
                    "source_row": r.source_row,
                    "reason": R_NO_ACCESSION,
                    "raw": {"form_type": r.form_type, "cik": r.cik, "source": r.source},
                }
            )
        else:
            groups.setdefault(r.accession, []).append(r)
    return q_rows, groups


def _merge_groups(groups: dict[str, list[FilingRecord]], by_cik, universe_set, cal, q_rows: list[dict], names=None) -> list[dict]:
    """One filing per accession (in accession order) from its records; a filing that fails a check
    is appended to ``q_rows`` instead. ``names``: each universe ticker's company names."""
    merged: list[dict] = []
    for acc in sorted(groups):
        g = sorted(groups[acc], key=lambda r: (r.file_index, r.source_row))
        form = (_first(r.form_type for r in g) or "").strip().upper()
        cik = _first(r.cik for r in g)
        times = [(r.accepted_ns, r.source) for r in g if r.accepted_ns is not None]
        public = max(t for t, _ in times) if times else None
        ticker = _pick_ticker(cik, [r.ticker for r in g], by_cik, universe_set)
        reason = (
            _merge_reason(form, ticker, public, cal)
            or _record_conflict(g)
            or _ticker_vs_sources(cik, ticker, g, by_cik, names or {})
            or _acceptance_vs_filed(g)
        )
        if reason:
            q_rows.append(_merge_quarantine_row(acc, g, form, cik, public, reason))
            continue
        m = _merged_filing(acc, g, form, cik=cik, ticker=ticker, times=times, public=public)
        m["_head"], m["_shared"] = (g[0].source_file, g[0].source_row), (by_cik.get(cik, []) if cik is not None else [])
        m["_date_only"] = [(r.source_file, r.source_row, r.date_only) for r in g if r.date_only and r.accepted_ns == public]
        merged.append(m)
    return merged


def _acceptance_vs_filed(g: list[FilingRecord]) -> str | None:
    """The cross-check of each record's acceptance time against its own filing date: the acceptance's
    New York date must lie in [filing date - ACCEPTANCE_BEFORE_FILED_MAX_DAYS, filing date]."""
    for r in g:
        if r.accepted_ns is None or r.filed_date is None:
            continue
        ny = pd.Timestamp(r.accepted_ns, tz="UTC").tz_convert("America/New_York").date()
        lag = (r.filed_date - ny).days
        if not 0 <= lag <= ACCEPTANCE_BEFORE_FILED_MAX_DAYS:
            where = "after" if lag < 0 else "before"
            return (
                f"{R_ACCEPTANCE_VS_FILED}: accepted {ny} (New York), {abs(lag)} days {where} its filing date "
                f"{r.filed_date} in {r.source_file} (allowed: the filing date or up to {ACCEPTANCE_BEFORE_FILED_MAX_DAYS} days before)"
            )
    return None


def _merge_reason(form: str, ticker: str | None, public: int | None, cal) -> str | None:
    """The first failing check of a merged filing: form not used, ticker not in universe, no
    acceptance time, public time outside the calendar; None when it passes."""
    if form not in FORMS_USED:
        return R_FORM
    if ticker is None:
        return R_NO_TICKER
    if public is None:
        return R_NO_TIME
    if not (cal.opens_ns[0] <= public <= cal.closes_ns[-1]):
        return R_OUT_OF_CALENDAR
    return None


def _merge_quarantine_row(acc: str, g: list[FilingRecord], form: str, cik, public: int | None, reason: str) -> dict:
    """The quarantine row of a merged filing: at its first record, with what the sources agreed on."""
    head = g[0]
    raw = {"accession": acc, "form_type": form, "cik": cik, "sources": sorted({f"{r.source}:{r.source_file}" for r in g})}
    if public is not None:
        raw["public_time"] = pd.Timestamp(public, tz="UTC").isoformat()
    return {"source_file": head.source_file, "source_row": head.source_row, "reason": reason, "raw": raw}


def _merged_filing(acc: str, g: list[FilingRecord], form: str, cik, ticker: str, times: list[tuple[int, str]], public: int) -> dict:
    """The accepted filing of an accession: the longest text, each field from the first record that has it."""
    text = max((r.text for r in g), key=len)
    cik = int(cik) if cik is not None else int(acc[:10])
    return {
        "accession": acc,
        "cik": cik,
        "ticker": ticker,
        # the name at filing time: the SGML header's conformed name, else the JSON's as of then
        "company": _first(r.company for r in sorted(g, key=lambda r: r.source != "sgml_header")) or ticker,
        "form_type": form,
        "public_ns": public,
        "acceptance_source": "|".join(sorted({s for _, s in times})),
        "filed_date": _first(r.filed_date for r in g),
        "report_date": _first(r.report_date for r in g) or report_date_in_text(text),
        "items": _first(r.items for r in g) or "",
        "text": text,
        "source_file": "|".join(sorted({r.source_file for r in g})),
        "_fye_header": _first(r.fye for r in g if r.source == "sgml_header"),
    }


_COVER_PERIOD = re.compile(
    rf"for\s+the\s+(?:quarterly\s+period|fiscal\s+year|fiscal\s+quarter|year)\s+ended\s+{_MONTHS}\s+(\d{{1,2}}),?\s+(\d{{4}})",
    re.IGNORECASE,
)


def report_date_in_text(text: str, limit: int = 10000) -> dt.date | None:
    """Period end stated on a 10-K/10-Q cover ("For the quarterly period ended June 29, 2024")."""
    m = _COVER_PERIOD.search(text[:limit]) if text else None
    if not m:
        return None
    try:
        return dt.datetime.strptime(f"{m.group(1)} {m.group(2)} {m.group(3)}", "%B %d %Y").date()
    except ValueError:
        return None
