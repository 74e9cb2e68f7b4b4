"""Staging one news file, or the rows appended to it, as a segment: the rows of the universe's tickers
streamed to a temporary parquet, checked in batches of about ``batch_bytes`` and written into month
files, with the segment's quarantine, flags and other tickers' counts (docs/ingest.md).
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from ...core.calendar import nyse
from .. import csvcheck
from ..base import FLAG_COLUMNS, SourceError, empty_flags, empty_quarantine
from .clock import NewsClock, minute_stats
from .columns import R_OVERSIZED, R_RAGGED, ROW_INDEX
from .read import news_source, normalize_news
from .rows import _accepted_frame, _naive_flags, _repair_flags, _title_flags, check_news_rows, raw_json

KEPT_ROW_GROUP = 2048  # rows per row group of the kept-rows parquet (bounds a batch's read)


def _minute_flags(stats: list[list]) -> dict[str, bool]:
    return {p: t == m for p, t, m in stats}


def _merge_minute(a: list[list], b: list[list]) -> list[list]:
    acc: dict[str, list[int]] = {}
    for p, t, m in [*a, *b]:
        x = acc.setdefault(p, [0, 0])
        x[0] += t
        x[1] += m
    return [[p, t, m] for p, (t, m) in sorted(acc.items())]


def structural_reasons(records: csvcheck.Records, row_offset: int) -> dict[int, str]:
    """Quarantine reasons of records that cannot be read as rows, by data row: ragged records and
    records over :data:`csvcheck.MAX_NEWS_RECORD_BYTES` (record 0 is the header)."""
    out = {row_offset + i - 1: f"{R_RAGGED}: {n} fields where the header has {records.header_fields}" for i, n in records.ragged.items()}
    for i, (_, length) in records.oversized.items():
        out[row_offset + i - 1] = f"{R_OVERSIZED}: {length:,} bytes (limit {csvcheck.MAX_NEWS_RECORD_BYTES:,})"
    return out


def _open_news(read_path: Path, source: Path, d: Path, row_offset: int):
    """The lazy scan of a news file (:func:`news_source`) and the reasons of its records
    that cannot be read as rows; an oversized record is replaced by an empty one in a temporary
    copy (returned, to be removed) so that no reader holds it. Errors name the real file."""
    name = source.name
    reasons: dict[int, str] = {}
    blanked = None
    try:
        path = read_path
        if read_path.name.lower().endswith(".csv"):
            problem = csvcheck.gzip_named_csv(read_path)
            if problem:
                raise SourceError(problem)
            csvcheck.check_csv_format(read_path)  # UTF-16, another delimiter
            records = csvcheck.scan_records(read_path, csvcheck.MAX_NEWS_RECORD_BYTES)
            reasons = structural_reasons(records, row_offset)
            if records.oversized:
                blanked = path = d / f".blanked-{uuid.uuid4().hex[:12]}.csv"
                csvcheck.blank_records(read_path, records, blanked)
        lf, cols, repaired = news_source(path)
    except SourceError as exc:
        if blanked is not None:
            blanked.unlink(missing_ok=True)
        if read_path != source:  # name the real file (and where an appended part starts)
            where = "" if name.lower().endswith(".gz") else f" (rows appended after data row {row_offset})"
            raise SourceError(str(exc).replace(read_path.name, f"{name}{where}")) from exc
        if blanked is not None:
            raise SourceError(str(exc).replace(blanked.name, name)) from exc
        raise
    return lf, cols, repaired, reasons, blanked


@dataclass(frozen=True)
class StageSettings:
    """What every segment of a staging run is read with: the universe's tickers (sorted, upper-case),
    the clock, the calendar span ``(calendar_start, calendar_end)`` and the bytes of kept rows
    checked and shaped at once."""

    universe: list[str]
    clock: NewsClock
    span: tuple
    batch_bytes: int


def _stage_segment(read_path: Path, source: Path, d: Path, row_offset: int, settings: StageSettings, prior_minute: list[list] | None):
    """Read one file (or its appended part, ``read_path``) into a new segment folder under ``d``.

    Returns (segment entry, minute stats of the whole file), or (None, None) when ``prior_minute``
    is given and the new rows change a publisher's minute precision.
    """
    lf, cols, repaired, reasons, blanked = _open_news(read_path, source, d, row_offset)
    try:
        rd = _SegmentRead(
            name=source.name, cols=cols, repaired=repaired, reasons=reasons, universe=settings.universe, clock=settings.clock, span=settings.span
        )
        return _stage_rows(rd, lf, d=d, row_offset=row_offset, batch_bytes=settings.batch_bytes, prior_minute=prior_minute)
    finally:
        if blanked is not None:
            blanked.unlink(missing_ok=True)


@dataclass(frozen=True)
class _SegmentRead:
    """How one segment's rows are read: the file's name and columns, whether its bytes were repaired,
    the reasons of its unreadable records (by data row), the universe, the clock and the calendar span."""

    name: str
    cols: dict
    repaired: bool
    reasons: dict[int, str]
    universe: object
    clock: object
    span: tuple


def _split_by_universe(rd: _SegmentRead, lf, kept_path: Path, row_offset: int) -> pl.DataFrame:
    """Stream the rows to keep (universe tickers, blank tickers, unreadable records) to ``kept_path``;
    returns the other tickers' row counts and first rows."""
    odd = sorted(rd.reasons)
    tk = pl.col(rd.cols["Stock_symbol"]).cast(pl.Utf8).str.strip_chars().str.to_uppercase()
    # rows that cannot be read are kept here so that they are quarantined with their own reason
    keep = tk.is_in(rd.universe) | tk.is_null() | (tk == "") | pl.col(ROW_INDEX).cast(pl.Int64).is_in(odd)
    lf = lf.select([pl.col(c) for c in dict.fromkeys(rd.cols.values())]).with_row_index(ROW_INDEX, offset=row_offset)
    try:
        lf.filter(keep).sink_parquet(kept_path, row_group_size=KEPT_ROW_GROUP)
        return (
            lf.filter(~keep)
            .group_by(tk.alias("ticker"))
            .agg(pl.len().cast(pl.Int64).alias("rows"), pl.col(ROW_INDEX).min().cast(pl.Int64).alias("first"))
            .collect(engine="streaming")
        )
    except Exception as exc:
        raise SourceError(f"{rd.name}: cannot be read ({str(exc).splitlines()[0]})") from exc


def _segment_minute(rd: _SegmentRead, kept_path: Path, prior_minute: list[list] | None) -> list[list] | None:
    """The minute stats of the whole file (publisher, timed rows, rows on the minute), this segment's
    kept rows merged into ``prior_minute``; None when they change a publisher's minute precision.
    Minute precision is a property of a whole source: it is gathered before the batches."""
    minute = [] if prior_minute is None else prior_minute
    clock, cols = rd.clock, rd.cols
    if not clock.dates_only or clock.trusted_publishers or clock.trusted_files:
        clock_cols = [c for c in dict.fromkeys([cols["Date"], cols.get("Publisher"), cols.get("date_has_time")]) if c]
        clock_rows = pl.read_parquet(kept_path, columns=[*clock_cols, ROW_INDEX])
        clock_rows = clock_rows.filter(~pl.col(ROW_INDEX).cast(pl.Int64).is_in(sorted(rd.reasons)))
        part = normalize_news(clock_rows, {k: v for k, v in cols.items() if v in clock_cols}, rd.name, False)
        stats = minute_stats(part, clock)
        new = [[p, int(t), int(m)] for p, t, m in stats.select("p", "timed", "on_minute").iter_rows()]
        merged = _merge_minute(minute, new)
        if prior_minute is not None:
            before, after = _minute_flags(prior_minute), _minute_flags(merged)
            if any(after[p] != v for p, v in before.items()):
                return None
        minute = merged
    return minute


def _checked_batch(rd: _SegmentRead, batch, cal, minute_frame: pl.DataFrame) -> pl.DataFrame:
    """One batch of kept rows normalised and checked (a null reason: accepted); an unreadable
    record keeps its own reason."""
    calendar_start, calendar_end = rd.span
    df = normalize_news(pl.from_arrow(batch), rd.cols, rd.name, rd.repaired)
    checked = check_news_rows(df, rd.universe, rd.clock, cal, calendar_end, minute_frame, calendar_start)
    if rd.reasons:
        own = pl.col("source_row").replace_strict(list(rd.reasons), list(rd.reasons.values()), default=None, return_dtype=pl.Utf8)
        checked = checked.with_columns(pl.coalesce(own, pl.col("reason")).alias("reason"))
    return checked


def _write_months(rd: _SegmentRead, kept: pq.ParquetFile, tmp_dir: Path, minute: list[list], batch_bytes: int) -> tuple[list[str], int, list, list]:
    """Check the kept rows in batches of about ``batch_bytes`` and write the accepted ones by
    decision month: (months written, rows accepted, quarantine parts, flag parts)."""
    minute_frame = pl.DataFrame(
        [[rd.name, p, t, m] for p, t, m in minute], orient="row", schema={"f": pl.Utf8, "p": pl.Utf8, "timed": pl.Int64, "on_minute": pl.Int64}
    )
    cal = nyse()
    q_parts, flag_parts = [], []
    writers: dict[str, pq.ParquetWriter] = {}
    accepted = 0
    n_kept = kept.metadata.num_rows
    row_bytes = max(1, sum(kept.metadata.row_group(i).total_byte_size for i in range(kept.num_row_groups)) // max(n_kept, 1))
    batch_rows = int(min(max(batch_bytes // row_bytes, 16), 200_000))
    try:
        for batch in kept.iter_batches(batch_size=batch_rows):
            checked = _checked_batch(rd, batch, cal, minute_frame)
            bad = checked.filter(pl.col("reason").is_not_null())
            if bad.height:
                q_parts.append(bad.select("source_file", "source_row", "reason", raw_json(bad), pl.lit(1, dtype=pl.Int64).alias("rows")))
            good = checked.filter(pl.col("reason").is_null())
            if not good.height:
                continue
            flag_parts.append(_repair_flags(good, cal))
            flag_parts.append(_naive_flags(good, cal))
            flag_parts.append(_title_flags(good, cal))
            acc = _accepted_frame(good, cal, keep_order=True).with_columns(good["ts_ns"].alias("_ts_ns"), raw_json(good).alias("_raw"))
            accepted += acc.height
            for (month,), g in acc.group_by(pl.col("date").dt.strftime("%Y-%m"), maintain_order=True):
                t = g.to_arrow()
                w = writers.get(month)
                if w is None:
                    w = writers[month] = pq.ParquetWriter(tmp_dir / f"month={month}.parquet", t.schema)
                w.write_table(t)
    finally:
        for w in writers.values():
            w.close()
    return sorted(writers), accepted, q_parts, flag_parts


def _write_side_tables(tmp_dir: Path, q_parts: list, flag_parts: list, others: pl.DataFrame) -> None:
    """The segment's quarantine, flags and other-ticker counts."""
    q = pl.concat([p for p in q_parts if p.height]) if any(p.height for p in q_parts) else empty_quarantine()
    q.select(list(empty_quarantine().columns)).write_parquet(tmp_dir / "quarantine.parquet")
    fl = pl.concat([p for p in flag_parts if p.height]) if any(p.height for p in flag_parts) else empty_flags()
    fl.select(list(FLAG_COLUMNS)).write_parquet(tmp_dir / "flags.parquet")
    others.select("ticker", "first", "rows").write_parquet(tmp_dir / "others.parquet")


def _stage_rows(rd: _SegmentRead, lf, d: Path, row_offset: int, batch_bytes: int, prior_minute):
    """:func:`_stage_segment` once the file is open (``lf``, read as ``rd`` says): stream, check and write the segment."""
    seg_name = f"seg-{uuid.uuid4().hex[:12]}"
    tmp_dir = d / f".{seg_name}"
    tmp_dir.mkdir(parents=True)
    try:
        kept_path = tmp_dir / "kept.parquet"
        others = _split_by_universe(rd, lf, kept_path, row_offset)
        kept = pq.ParquetFile(kept_path)
        seg_rows = kept.metadata.num_rows + int(others["rows"].sum())
        minute = _segment_minute(rd, kept_path, prior_minute)
        if minute is None:  # (the folder is left to the next manifest write, which removes it)
            return None, None
        months, accepted, q_parts, flag_parts = _write_months(rd, kept, tmp_dir, minute, batch_bytes)
        kept_path.unlink()
        _write_side_tables(tmp_dir, q_parts, flag_parts, others)
        os.replace(tmp_dir, d / seg_name)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    seg = {"name": seg_name, "rows": seg_rows, "row_offset": row_offset, "accepted": accepted, "months": months}
    return seg, minute
