"""The filings parquets (``filings_index.parquet``, ``filings_text.parquet``) -> records, and
:func:`_read_records`: every configured index / text path read by its format.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ..base import SourceError, expand_paths
from .constants import R_CORRUPT
from .full_submission import read_full_submission
from .records import FilingRecord, _acceptance_kw, _date, _norm_accession, _source_label
from .submissions import read_submissions_json


def _own(value: object) -> tuple[str, ...]:
    """A parquet cell as a source's own ticker or name: () when empty."""
    return (str(value).strip(),) if isinstance(value, str) and value.strip() else ()


def _pcol(df: pl.DataFrame, name: str) -> list:
    return df[name].to_list() if name in df.columns else [None] * df.height


def read_filings_parquet(path: Path, file_index: int) -> list[FilingRecord]:
    """Records of ``filings_index.parquet`` (one per row) or ``filings_text.parquet`` (one per accession)."""
    df = pl.read_parquet(path)
    cols = set(df.columns)
    if not {"accession", "form_type"} <= cols:
        raise SourceError(f"{path.name}: unknown filings parquet (needs accession, form_type; has {df.columns})")
    if "section_idx" in cols and "text" in cols:
        return _text_parquet_records(df, path, file_index)
    acc_col = next((c for c in ("acceptance_datetime_utc", "acceptance_utc", "public_time") if c in cols), None)
    out = []
    for i, (acc, form, cik, comp, tick, at, filed, rep, items, src) in enumerate(
        zip(
            _pcol(df, "accession"),
            _pcol(df, "form_type"),
            _pcol(df, "cik"),
            _pcol(df, "company"),
            _pcol(df, "ticker"),
            _pcol(df, acc_col) if acc_col else [None] * df.height,
            _pcol(df, "filed_date"),
            _pcol(df, "report_date"),
            _pcol(df, "items"),
            _pcol(df, "acceptance_source"),
        )
    ):
        out.append(
            FilingRecord(
                accession=_norm_accession(acc),
                source=_source_label(src, "filings_index"),
                source_file=path.name,
                source_row=i,
                file_index=file_index,
                form_type=form,
                cik=int(cik) if cik is not None else None,
                company=comp,
                ticker=tick,
                tickers=_own(tick),
                names=_own(comp),
                **_acceptance_kw(at),
                filed_date=_date(filed),
                report_date=_date(rep),
                items=(items or "").strip(),
                fye=None,
            )
        )
    return out


def _text_parquet_records(df: pl.DataFrame, path: Path, file_index: int) -> list[FilingRecord]:
    df = df.with_row_index("_row").sort("accession", "section_idx")
    out = []
    for (acc,), g in df.group_by(["accession"], maintain_order=True):
        parts = []
        for sec, body in zip(_pcol(g, "section"), _pcol(g, "text")):
            body = (body or "").strip()
            sec = (sec or "").strip()
            if sec and not sec.lower().startswith("cover") and not body.lower().startswith(sec.lower()):
                body = f"{sec}\n{body}"
            if body:
                parts.append(body)
        r = g.row(0, named=True)
        at = r.get("acceptance_datetime_utc")
        out.append(
            FilingRecord(
                accession=_norm_accession(acc),
                source=_source_label(r.get("acceptance_source"), "filings_text"),
                source_file=path.name,
                source_row=int(g["_row"].min()),
                file_index=file_index,
                form_type=r.get("form_type"),
                cik=r.get("cik"),
                company=r.get("company"),
                ticker=r.get("ticker"),
                tickers=_own(r.get("ticker")),
                names=_own(r.get("company")),
                **_acceptance_kw(at),
                filed_date=_date(r.get("filed_date")),
                report_date=_date(r.get("report_date")),
                text="\n\n".join(parts),
            )
        )
    return out


def _read_records(index_paths, text_paths) -> list[FilingRecord]:
    pats = ("full-submission.txt",)
    idx_files = expand_paths(index_paths, pats) if index_paths else []
    txt_files = set(expand_paths(text_paths, pats)) if text_paths else set()
    files = sorted(set(idx_files) | txt_files, key=str)
    records: list[FilingRecord] = []
    for i, f in enumerate(files):
        name = f.name.lower()
        if name.endswith(".json"):
            records += read_submissions_json(f, i)
        elif name.endswith(".parquet"):
            records += read_filings_parquet(f, i)
        elif name.endswith(".txt"):
            try:
                records += read_full_submission(f, i, with_text=f in txt_files)
            except (SourceError, OSError) as exc:  # one bad filing is quarantined; the others load
                acc = _norm_accession(f.parent.name)
                records.append(
                    FilingRecord(
                        accession=acc,
                        source="sgml_header",
                        source_file=f"{f.parent.name}/{f.name}",
                        source_row=0,
                        file_index=i,
                        problem=f"{R_CORRUPT}: {str(exc).split(': ', 1)[-1]}",
                    )
                )
        else:
            raise SourceError(f"{f.name}: unknown filings file format (expected .json, .parquet or full-submission .txt)")
    return records
