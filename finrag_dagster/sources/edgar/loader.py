"""``load_filings``: EDGAR index and text sources -> ``filings_raw`` rows, quarantine and flags.

Reads the records (:mod:`.index_sources`), merges them per accession (:mod:`.merge`), adds fiscal
periods (point in time: a later 10-K never changes an earlier filing's) and builds the frames.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from ...core.calendar import nyse
from ...core.storage.schemas import FILINGS_RAW
from ..base import FLAG_COLUMNS, LoadResult, SourceError, empty_flags, empty_quarantine, quarantine_rows
from .constants import DEFAULT_FYE, F_DATE_ONLY, F_SHARED_CIK
from .index_sources import _read_records
from .merge import _group_records, _json_duplicates, _merge_groups
from .periods import fiscal_period
from .records import FilingRecord


def _cik_tickers(universe: pl.DataFrame) -> tuple[dict[int, list[str]], set[str]]:
    """Universe tickers by CIK (sorted), and the set of all universe tickers.

    Raises
    ------
    SourceError
        Two universe tickers share a CIK but name different companies (share classes may share one).
    """
    by_cik: dict[int, list[str]] = {}
    for t, c in zip(universe["ticker"].to_list(), universe["cik"].to_list()):
        if c is not None:
            by_cik.setdefault(int(c), []).append(t)
    by_cik = {k: sorted(v) for k, v in by_cik.items()}
    _check_shared_ciks(by_cik, _ticker_names(universe), universe)
    return by_cik, set(universe["ticker"].to_list())


def _ticker_names(universe: pl.DataFrame) -> dict[str, set[str]]:
    """Each universe ticker's company names (its ``aliases``, the ticker itself left out); {} without them."""
    if "aliases" not in universe.columns:
        return {}
    out = {}
    for t, a in zip(universe["ticker"].to_list(), universe["aliases"].to_list()):
        out[t] = set((a or "").split("|")) - {"", str(t).lower()}
    return out


def _check_shared_ciks(by_cik: dict[int, list[str]], names: dict[str, set[str]], universe: pl.DataFrame) -> None:
    """Raise when a CIK is given to two universe tickers whose names share nothing (a wrong cik cell)."""
    company = dict(zip(universe["ticker"].to_list(), universe["company"].to_list())) if "company" in universe.columns else {}
    for cik, ts in by_cik.items():
        first = names.get(ts[0], set())
        for t in ts[1:]:
            other = names.get(t, set())
            if first and other and not first & other:
                raise SourceError(
                    f"universe: CIK {cik} is given to {ts[0]} ({company.get(ts[0])}) and {t} ({company.get(t)}), which name different "
                    "companies, so their filings would go to either. Fix the cik column of the universe file (sources.universe); "
                    "share classes of one company (GOOG, GOOGL) may share a CIK when their names agree."
                )


def _shared_cik_flags(accepted: pl.DataFrame, merged: list[dict]) -> pl.DataFrame:
    """A ``shared_cik`` flag per accepted filing of a CIK that several universe tickers share: it went to one."""
    day = dict(zip(accepted["accession"].to_list(), accepted["date"].to_list()))
    rows = []
    for m in merged:
        shared = m["_shared"]
        if len(shared) < 2:
            continue
        others = ", ".join(t for t in shared if t != m["ticker"])
        detail = (
            f"CIK {m['cik']} is shared by universe tickers {', '.join(shared)}: filing {m['accession']} goes to {m['ticker']} only "
            f"(the source's own ticker when it names one of them, else the first in sort order); {others} gets no copy"
        )
        f, r = m["_head"]
        rows.append({"source_file": f, "source_row": r, "ticker": m["ticker"], "date": day[m["accession"]], "flag": F_SHARED_CIK, "detail": detail})
    return pl.DataFrame(rows, schema=FLAG_COLUMNS).sort("source_file", "source_row") if rows else empty_flags()


def _empty_filings() -> pl.DataFrame:
    return pl.from_arrow(FILINGS_RAW.schema.empty_table()).with_columns(pl.lit(None, dtype=pl.Date).alias("date"))


def load_filings(index_paths, text_paths, universe: pl.DataFrame) -> LoadResult:
    """Read EDGAR index and text sources into ``filings_raw`` rows plus quarantine.

    Parameters
    ----------
    index_paths, text_paths : list of str/Path (or one)
        Files, globs or directories (walked for ``full-submission.txt``). Full submissions in
        ``text_paths`` also give their header; those only in ``index_paths`` give the header only.
    universe : pl.DataFrame
        UNIVERSE frame (ticker, cik): maps CIK to ticker.

    Returns
    -------
    LoadResult
        ``accepted``: FILINGS_RAW columns plus ``date`` (decision day of public_time), sorted by
        (public_time, accession). Quarantine reasons, first failing check: per source record,
        unusable (unreadable file, JSON arrays of unequal length, JSON cik vs file name, two
        accessions in one file), missing accession, or a second entry of an accession in one
        submissions JSON (the later acceptance time is kept); per filing, form not used, ticker not
        in universe, no acceptance time, public time outside the calendar, truncated submission or
        a header giving one of its fields twice, universe ticker vs the source's own, acceptance vs
        filing date. ``flags``: ``shared_cik`` per filing of a CIK that several universe tickers
        share; ``date_only_acceptance`` per filing whose public time is a date-only acceptance
        time's (the end of that New York day).

    Raises
    ------
    SourceError
        Two universe tickers share a CIK but name different companies; an unreadable JSON (not
        JSON, not UTF-8 and no byte-order mark, a key given twice with different values).
    """
    by_cik, universe_set = _cik_tickers(universe)
    records = _read_records(index_paths, text_paths)
    cal = nyse()
    records, dup_rows = _json_duplicates(records)
    q_rows, groups = _group_records(records)
    q_rows += dup_rows
    rows_in = len(q_rows) + len(groups)
    merged = _merge_groups(groups, by_cik, universe_set, cal, q_rows, _ticker_names(universe))
    _add_fiscal_periods(merged, records)
    quarantine = _quarantine_frame(q_rows)
    out = _accepted_frame(merged, cal) if merged else _empty_filings()
    flags = pl.concat([_shared_cik_flags(out, merged), _date_only_flags(out, merged)]).sort("source_file", "source_row", "flag")
    return LoadResult("filings_raw", out, quarantine, rows_in, flags).check()


def _date_only_flags(accepted: pl.DataFrame, merged: list[dict]) -> pl.DataFrame:
    """A ``date_only_acceptance`` flag per accepted filing whose public time is a date-only acceptance
    time's (the end of that New York day), naming the session it is decided on."""
    day = dict(zip(accepted["accession"].to_list(), accepted["date"].to_list()))
    rows = []
    for m in merged:
        for f, r, value in m["_date_only"]:
            detail = (
                f"acceptance time {value!r} of {m['accession']} in {f} is a date without a time of day: read as public at the end "
                f"of that day (23:59:59 New York), so decided on the next session, {day[m['accession']]}; a source with the "
                "time of day (the full-submission.txt header's <ACCEPTANCE-DATETIME>) would decide it on its own session"
            )
            rows.append(
                {"source_file": f, "source_row": r, "ticker": m["ticker"], "date": day[m["accession"]], "flag": F_DATE_ONLY, "detail": detail}
            )
    return pl.DataFrame(rows, schema=FLAG_COLUMNS) if rows else empty_flags()


def _add_fiscal_periods(merged: list[dict], records: list[FilingRecord]) -> None:
    """Each merged filing's ``fiscal_period``, from its fiscal year end: the SGML header's, else the
    latest prior 10-K's, else the submissions JSON's (``_fye_header`` is dropped)."""
    json_fye = {}
    for r in records:
        if r.source == "submissions_json" and r.fye and r.cik is not None:
            json_fye.setdefault(int(r.cik), r.fye)
    history = _annual_report_history(merged)
    for m in merged:
        fye = m.pop("_fye_header") or _fye_from_history(history.get(m["cik"], []), m["public_ns"], json_fye.get(m["cik"]))
        m["fiscal_period"] = fiscal_period(m["form_type"], m["report_date"], fye, m["text"])


def _annual_report_history(merged: list[dict]) -> dict[int, list[tuple[int, str]]]:
    """Per CIK, (public_ns, "MMDD" of the report date) of each 10-K, in time order."""
    out: dict[int, list[tuple[int, str]]] = {}
    for m in merged:
        if m["form_type"].startswith("10-K") and m["report_date"] is not None:
            out.setdefault(m["cik"], []).append((m["public_ns"], m["report_date"].strftime("%m%d")))
    return {k: sorted(v) for k, v in out.items()}


def _fye_from_history(history: list[tuple[int, str]], public_ns: int, json_fye: str | None) -> str:
    """Fiscal year end for a filing without a header one.

    The latest 10-K accepted at or before the filing (point in time), else the submissions
    JSON's company-level ``fiscalYearEnd``, else "1231". A later 10-K is never consulted: what a
    filing says about itself must not change when a future filing arrives (time-travel test).
    """
    prior = [f for t, f in history if t <= public_ns]
    if prior:
        return prior[-1]
    if json_fye:
        return json_fye
    return DEFAULT_FYE


def _quarantine_frame(rows: list[dict]) -> pl.DataFrame:
    if not rows:
        return empty_quarantine()
    parts = []
    for reason in sorted({r["reason"] for r in rows}):
        sel = [r for r in rows if r["reason"] == reason]
        df = pl.DataFrame(
            {
                "source_file": [r["source_file"] for r in sel],
                "source_row": pl.Series([r["source_row"] for r in sel], dtype=pl.Int64),
                "raw_json": [json.dumps(r["raw"], default=str, sort_keys=True) for r in sel],
            }
        )
        q = quarantine_rows(df.select("source_file", "source_row"), reason)
        parts.append(q.with_columns(df["raw_json"].alias("raw")))
    return pl.concat(parts).sort("source_file", "source_row", "reason", "raw")


def _accepted_frame(rows: list[dict], cal) -> pl.DataFrame:
    public = np.array([r["public_ns"] for r in rows], dtype=np.int64)
    days = cal.decision_days(public).astype("datetime64[D]")
    df = pl.DataFrame(
        {
            **{k: [r[k] for r in rows] for k in ("accession", "cik", "ticker", "company", "form_type")},
            "public_time": pl.Series(public).cast(pl.Datetime("ns", "UTC")).dt.cast_time_unit("us"),
            **{k: [r[k] for r in rows] for k in ("acceptance_source", "filed_date", "report_date", "fiscal_period", "items", "text", "source_file")},
            "date": pl.Series(days).cast(pl.Date),
        },
        schema_overrides={"filed_date": pl.Date, "report_date": pl.Date, "fiscal_period": pl.Utf8, "cik": pl.Int64},
    )
    schema = _empty_filings().schema
    return df.select([pl.col(c).cast(t) for c, t in schema.items()]).sort("public_time", "accession")
