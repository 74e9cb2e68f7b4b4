"""Streaming, incremental news ingest: each news file is read once, in bounded memory, into a
staging folder; a re-run reads only files that changed and only the rows appended to a CSV.

A CSV is checked in chunks (:mod:`.csvcheck`), filtered to the universe's tickers by a lazy polars
scan, and its kept rows are shaped in batches of about :data:`BATCH_BYTES` into month files;
duplicates are found across staged files when the stage is read (:meth:`NewsStage.duplicates`).
Each file's ``manifest.json`` decides what a re-run reads, and is replaced atomically, so a crash
leaves the previous stage. The steps, the re-run rules and measurements: docs/ingest.md.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from ..core.calendar import nyse
from ..core.storage.atomic import atomic_file
from . import csvcheck, fnspid
from .base import FLAG_COLUMNS, LoadResult, SourceError, empty_flags, empty_quarantine, expand_paths

STAGE_VERSION = 3  # bump when what a staged segment holds changes (3: title_from_url flags)
BATCH_BYTES = 48 << 20  # bytes of kept rows checked and shaped at once
KEPT_ROW_GROUP = 2048  # rows per row group of the kept-rows parquet (bounds a batch's read)
HEAD_BYTES = 1 << 20
TAIL_BYTES = 1 << 16
KEY_COLUMNS = ["ticker", "url", "_ts_ns", "source_file", "source_row"]


# ---------------------------------------------------------------------------- fingerprints
def _sha(path: Path, start: int, stop: int) -> str:
    h = hashlib.sha1()
    with open(path, "rb") as fh:
        fh.seek(max(start, 0))
        left = stop - max(start, 0)
        while left > 0:
            b = fh.read(min(left, 1 << 20))
            if not b:
                break
            h.update(b)
            left -= len(b)
    return h.hexdigest()


def _byte_at(path: Path, pos: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(pos)
        return fh.read(1)


def _header_len(path: Path) -> int:
    """Bytes of the CSV's header line, its newline included."""
    with open(path, "rb") as fh:
        line = fh.readline(1 << 20)
    if not line.endswith(b"\n"):
        raise SourceError(f"{path.name}: no header line within the first MiB")
    return len(line)


def settings_key(universe: list[str], clock: fnspid.NewsClock, calendar_end: dt.date | None, calendar_start: dt.date | None = None) -> str:
    """What the staged rows depend on besides the file's bytes."""
    blob = json.dumps(
        {
            "v": STAGE_VERSION,
            "universe": universe,
            "clock": clock.describe(),
            "calendar_start": str(calendar_start),
            "calendar_end": str(calendar_end),
            "polars": pl.__version__,
        },
        sort_keys=True,
    )
    return hashlib.sha1(blob.encode()).hexdigest()


# ---------------------------------------------------------------------------- the stage
@dataclass
class FileStage:
    """One source file's staged segments (``manifest`` as written in its ``manifest.json``)."""

    path: Path
    dir: Path
    manifest: dict

    @property
    def segments(self) -> list[dict]:
        return self.manifest["segments"]

    def seg_dir(self, seg: dict) -> Path:
        return self.dir / seg["name"]

    def month_files(self, months: set[str] | None = None) -> list[Path]:
        out = []
        for seg in self.segments:
            for m in seg["months"]:
                if months is None or m in months:
                    out.append(self.seg_dir(seg) / f"month={m}.parquet")
        return out


@dataclass
class NewsStage:
    """The staged news of a set of files, read back table by table in bounded memory."""

    files: list[FileStage]
    rows_in: int
    rows_read: int = 0  # source rows parsed by this call (0 when nothing changed)
    actions: dict[str, str] = field(default_factory=dict)  # file name -> "unchanged" | "appended" | "read"
    pruned: int = 0  # staged folders of files no longer configured, removed by this call
    _dups: pl.DataFrame | None = None

    def _month_files(self, months: set[str] | None = None) -> list[Path]:
        return [f for fs in self.files for f in fs.month_files(months)]

    def duplicates(self) -> pl.DataFrame:
        """Staged rows that repeat an earlier row's (ticker, url, source time), file order first."""
        if self._dups is None:
            parts = []
            for i, fs in enumerate(self.files):
                for f in fs.month_files():
                    parts.append(pl.read_parquet(f, columns=KEY_COLUMNS).with_columns(pl.lit(i, dtype=pl.Int32).alias("_file")))
            if not parts:
                self._dups = pl.DataFrame(schema={"source_file": pl.Utf8, "source_row": pl.Int64})
            else:
                keys = pl.concat(parts).sort("_file", "source_row")
                self._dups = keys.filter(~pl.struct("ticker", "url", "_ts_ns").is_first_distinct()).select("source_file", "source_row")
        return self._dups

    def accepted_count(self) -> int:
        return sum(int(s["accepted"]) for fs in self.files for s in fs.segments) - self.duplicates().height

    def accepted_between(self, lo: dt.date, hi: dt.date) -> pl.DataFrame:
        """Accepted rows (NEWS_RAW columns + ``date``) decided on days ``lo`` … ``hi``."""
        months = {f"{y:04d}-{m:02d}" for y, m in _months(lo, hi)}
        files = self._month_files(months)
        if not files:
            return fnspid._empty_news()
        df = pl.concat([pl.read_parquet(f) for f in files], how="vertical")
        df = df.filter(pl.col("date").is_between(lo, hi))
        dups = self.duplicates()
        if dups.height:
            df = df.join(dups, on=["source_file", "source_row"], how="anti")
        cols = fnspid._empty_news().columns
        return df.select(cols).sort("public_time", "news_id")

    def date_span(self) -> tuple[dt.date, dt.date] | None:
        months = sorted({m for fs in self.files for s in fs.segments for m in s["months"]})
        if not months:
            return None
        first = dt.date.fromisoformat(months[0] + "-01")
        y, m = (int(x) for x in months[-1].split("-"))
        last = dt.date(y + (m == 12), m % 12 + 1, 1) - dt.timedelta(days=1)
        return first, last

    def quarantine(self) -> pl.DataFrame:
        """Every quarantine row: the staged ones and the duplicates found across files."""
        parts = [pl.read_parquet(fs.seg_dir(s) / "quarantine.parquet") for fs in self.files for s in fs.segments]
        for fs in self.files:  # rows of other tickers: one row per file and ticker, over all its segments
            others = [pl.read_parquet(fs.seg_dir(s) / "others.parquet") for s in fs.segments]
            merged = pl.concat(others).group_by("ticker").agg(pl.col("first").min(), pl.col("rows").sum())
            parts.append(_summary_rows(merged, fs.path.name))
        dups = self.duplicates()
        if dups.height:
            raws = []
            for fs in self.files:
                for f in fs.month_files():
                    got = pl.read_parquet(f, columns=["source_file", "source_row", "_raw"]).join(dups, on=["source_file", "source_row"])
                    if got.height:
                        raws.append(got)
            d = pl.concat(raws)
            parts.append(
                d.select(
                    "source_file",
                    "source_row",
                    pl.lit(fnspid.R_DUPLICATE).alias("reason"),
                    pl.col("_raw").alias("raw"),
                    pl.lit(1, dtype=pl.Int64).alias("rows"),
                )
            )
        parts = [p for p in parts if p.height]
        if not parts:
            return empty_quarantine()
        return pl.concat([p.select(list(empty_quarantine().columns)) for p in parts]).sort("source_file", "source_row", "reason")

    def flags(self) -> pl.DataFrame:
        parts = [pl.read_parquet(fs.seg_dir(s) / "flags.parquet") for fs in self.files for s in fs.segments]
        parts = [p for p in parts if p.height]
        if not parts:
            return empty_flags()
        df = pl.concat(parts)
        dups = self.duplicates()
        if dups.height:
            df = df.join(dups, on=["source_file", "source_row"], how="anti")
        return df.select(list(FLAG_COLUMNS)).sort("source_file", "source_row", "flag")

    def load_all(self) -> LoadResult:
        """Everything in memory (for files that fit once loaded)."""
        span = self.date_span()
        acc = self.accepted_between(*span) if span else fnspid._empty_news()
        return LoadResult("news_raw", acc, self.quarantine(), self.rows_in, self.flags()).check()


def _months(lo: dt.date, hi: dt.date):
    y, m = lo.year, lo.month
    while (y, m) <= (hi.year, hi.month):
        yield y, m
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)


# ---------------------------------------------------------------------------- staging
def stage_news(
    files: list[Path],
    universe_tickers: set[str],
    clock: fnspid.NewsClock,
    root: Path,
    *,
    calendar_end: dt.date | None = None,
    calendar_start: dt.date | None = None,
    batch_bytes: int = BATCH_BYTES,
) -> NewsStage:
    """Bring the staging folder ``root`` up to date with ``files`` (in that order) and return it.

    Reads only what changed since the last call (see the module's notes); ``rows_read`` says how
    many source rows were parsed.
    """
    universe = sorted({t.strip().upper() for t in universe_tickers})
    key = settings_key(universe, clock, calendar_end, calendar_start)
    span = (calendar_start, calendar_end)
    root.mkdir(parents=True, exist_ok=True)
    stages, rows_in, rows_read, actions = [], 0, 0, {}
    for path in files:
        fs, read, action = _stage_file(Path(path), universe, clock, span=span, root=root, key=key, batch_bytes=batch_bytes)
        stages.append(fs)
        rows_in += sum(int(s["rows"]) for s in fs.segments)
        rows_read += read
        actions[Path(path).name] = action
    return NewsStage(stages, rows_in, rows_read, actions, pruned=prune(root, files))


def prune(root: Path, files: list[Path]) -> int:
    """Remove the staged folders of files that are no longer configured (their rows would
    otherwise stay on disk for ever); returns how many were removed."""
    keep = {_file_dir(root, Path(f)).name for f in files}
    gone = 0
    for d in root.iterdir():
        if (
            d.is_dir()
            and d.name not in keep
            and len(d.name) == 16
            and all(c in "0123456789abcdef" for c in d.name)
            and (d / "manifest.json").exists()
        ):
            shutil.rmtree(d, ignore_errors=True)
            gone += 1
    return gone


def _file_dir(root: Path, path: Path) -> Path:
    return root / hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]


def _read_manifest(d: Path) -> dict | None:
    f = d / "manifest.json"
    if not f.exists():
        return None
    try:
        return json.loads(f.read_text())
    except ValueError:
        return None


def _write_manifest(d: Path, manifest: dict) -> None:
    with atomic_file(d / "manifest.json", fsync=True) as fh:
        fh.write(json.dumps(manifest, sort_keys=True, indent=1).encode())
    keep = {s["name"] for s in manifest["segments"]} | {"manifest.json"}
    for p in d.iterdir():  # segments of earlier stages, or of a run that crashed
        if p.name not in keep:
            shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)


def _stage_file(path: Path, universe, clock, span, root: Path, key: str, batch_bytes: int):
    st = path.stat()
    d = _file_dir(root, path)
    d.mkdir(parents=True, exist_ok=True)
    old = _read_manifest(d)
    head = _sha(path, 0, min(HEAD_BYTES, st.st_size))
    if old and old.get("key") == key and old.get("path") == str(path.resolve()) and old["segments"]:
        if old["size"] == st.st_size and old["mtime_ns"] == st.st_mtime_ns and old["head"] == head:
            return FileStage(path, d, old), 0, "unchanged"
        end = old["size"]
        csv = path.name.lower().endswith(".csv")
        if (
            csv
            and st.st_size > end
            and old["head"] == _sha(path, 0, min(HEAD_BYTES, end))
            and len(old["segments"]) < 1000
            and old["tail"] == _sha(path, end - TAIL_BYTES, end)
            and _byte_at(path, end - 1) == b"\n"
        ):
            appended = _stage_append(path, d, old, universe=universe, clock=clock, span=span, batch_bytes=batch_bytes)
            if appended is not None:
                manifest, read = appended
                manifest.update(size=st.st_size, mtime_ns=st.st_mtime_ns, head=head, tail=_sha(path, st.st_size - TAIL_BYTES, st.st_size))
                _write_manifest(d, manifest)
                return FileStage(path, d, manifest), read, "appended"
    if path.name.lower().endswith(".csv.gz"):  # decompressed to a temporary CSV, streamed, so memory stays bounded
        tmp = d / f".gunzip-{uuid.uuid4().hex[:12]}.csv"
        try:
            try:
                with gzip.open(path, "rb") as src, open(tmp, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 24)
            except (OSError, EOFError) as exc:
                raise SourceError(f"{path.name}: not a readable gzip file ({exc})") from exc
            seg, minute = _stage_segment(
                tmp, path, d, row_offset=0, universe=universe, clock=clock, span=span, batch_bytes=batch_bytes, prior_minute=None
            )
        finally:
            tmp.unlink(missing_ok=True)
    else:
        seg, minute = _stage_segment(
            path, path, d, row_offset=0, universe=universe, clock=clock, span=span, batch_bytes=batch_bytes, prior_minute=None
        )
    manifest = {
        "version": STAGE_VERSION,
        "key": key,
        "path": str(path.resolve()),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "head": head,
        "tail": _sha(path, st.st_size - TAIL_BYTES, st.st_size),
        "header_len": _header_len(path) if path.name.lower().endswith(".csv") and st.st_size else 0,
        "minute": minute,
        "segments": [seg],
    }
    _write_manifest(d, manifest)
    return FileStage(path, d, manifest), int(seg["rows"]), "read"


def _minute_flags(stats: list[list]) -> dict[str, bool]:
    return {p: t == m for p, t, m in stats}


def _merge_minute(a: list[list], b: list[list]) -> list[list]:
    acc: dict[str, list[int]] = {}
    for p, t, m in [*a, *b]:
        x = acc.setdefault(p, [0, 0])
        x[0] += t
        x[1] += m
    return [[p, t, m] for p, (t, m) in sorted(acc.items())]


def _stage_append(path: Path, d: Path, old: dict, universe, clock, span, batch_bytes):
    """Stage the bytes appended after ``old["size"]`` as a new segment; None when the whole file
    must be read again (the new rows change how earlier rows were read)."""
    tmp = d / f".append-{uuid.uuid4().hex}.csv"
    try:
        with open(path, "rb") as src, open(tmp, "wb") as out:
            out.write(src.read(old["header_len"]))
            src.seek(old["size"])
            shutil.copyfileobj(src, out, 1 << 24)
        offset = sum(int(s["rows"]) for s in old["segments"])
        seg, minute = _stage_segment(
            tmp, path, d, row_offset=offset, universe=universe, clock=clock, span=span, batch_bytes=batch_bytes, prior_minute=old["minute"]
        )
    finally:
        tmp.unlink(missing_ok=True)
    if seg is None:
        return None
    manifest = dict(old)
    manifest["segments"] = [*old["segments"], seg]
    manifest["minute"] = minute
    return manifest, int(seg["rows"])


def structural_reasons(records: csvcheck.Records, row_offset: int) -> dict[int, str]:
    """Quarantine reasons of records that cannot be read as rows, by data row: ragged records and
    records over :data:`csvcheck.MAX_NEWS_RECORD_BYTES` (record 0 is the header)."""
    out = {row_offset + i - 1: f"{fnspid.R_RAGGED}: {n} fields where the header has {records.header_fields}" for i, n in records.ragged.items()}
    for i, (_, length) in records.oversized.items():
        out[row_offset + i - 1] = f"{fnspid.R_OVERSIZED}: {length:,} bytes (limit {csvcheck.MAX_NEWS_RECORD_BYTES:,})"
    return out


def _open_news(read_path: Path, source: Path, d: Path, row_offset: int):
    """The lazy scan of a news file (:func:`fnspid.news_source`) and the reasons of its records
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
        lf, cols, repaired = fnspid.news_source(path)
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


def _stage_segment(read_path: Path, source: Path, d: Path, row_offset: int, universe, clock, span, batch_bytes: int, prior_minute: list[list] | None):
    """Read one file (or its appended part, ``read_path``) into a new segment folder under ``d``.

    Returns (segment entry, minute stats of the whole file), or (None, None) when ``prior_minute``
    is given and the new rows change a publisher's minute precision.
    """
    lf, cols, repaired, reasons, blanked = _open_news(read_path, source, d, row_offset)
    try:
        return _stage_rows(
            lf,
            cols,
            repaired,
            reasons=reasons,
            source=source,
            d=d,
            row_offset=row_offset,
            universe=universe,
            clock=clock,
            span=span,
            batch_bytes=batch_bytes,
            prior_minute=prior_minute,
        )
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
    keep = tk.is_in(rd.universe) | tk.is_null() | (tk == "") | pl.col(fnspid.ROW_INDEX).cast(pl.Int64).is_in(odd)
    lf = lf.select([pl.col(c) for c in dict.fromkeys(rd.cols.values())]).with_row_index(fnspid.ROW_INDEX, offset=row_offset)
    try:
        lf.filter(keep).sink_parquet(kept_path, row_group_size=KEPT_ROW_GROUP)
        return (
            lf.filter(~keep)
            .group_by(tk.alias("ticker"))
            .agg(pl.len().cast(pl.Int64).alias("rows"), pl.col(fnspid.ROW_INDEX).min().cast(pl.Int64).alias("first"))
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
        clock_rows = pl.read_parquet(kept_path, columns=[*clock_cols, fnspid.ROW_INDEX])
        clock_rows = clock_rows.filter(~pl.col(fnspid.ROW_INDEX).cast(pl.Int64).is_in(sorted(rd.reasons)))
        part = fnspid.normalize_news(clock_rows, {k: v for k, v in cols.items() if v in clock_cols}, rd.name, False)
        stats = fnspid.minute_stats(part, clock)
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
    df = fnspid.normalize_news(pl.from_arrow(batch), rd.cols, rd.name, rd.repaired)
    checked = fnspid.check_news_rows(df, rd.universe, rd.clock, cal, calendar_end, minute_frame, calendar_start)
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
                q_parts.append(bad.select("source_file", "source_row", "reason", fnspid.raw_json(bad), pl.lit(1, dtype=pl.Int64).alias("rows")))
            good = checked.filter(pl.col("reason").is_null())
            if not good.height:
                continue
            flag_parts.append(fnspid._repair_flags(good, cal))
            flag_parts.append(fnspid._naive_flags(good, cal))
            flag_parts.append(fnspid._title_flags(good, cal))
            acc = fnspid._accepted_frame(good, cal, keep_order=True).with_columns(good["ts_ns"].alias("_ts_ns"), fnspid.raw_json(good).alias("_raw"))
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


def _stage_rows(lf, cols, repaired, reasons, source: Path, d: Path, row_offset: int, universe, clock, span, batch_bytes: int, prior_minute):
    """:func:`_stage_segment` once the file is open: stream, check and write the segment."""
    rd = _SegmentRead(name=source.name, cols=cols, repaired=repaired, reasons=reasons, universe=universe, clock=clock, span=span)
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


def _summary_rows(others: pl.DataFrame, name: str) -> pl.DataFrame:
    """One quarantine row per ticker outside the universe: at its first row, with its count."""
    if not others.height:
        return empty_quarantine()
    others = others.sort("first")
    raws = [
        json.dumps({"Stock_symbol": t, "first_row": f, "rows": n}, sort_keys=True) for t, f, n in others.select("ticker", "first", "rows").iter_rows()
    ]
    return pl.DataFrame(
        {
            "source_file": [name] * others.height,
            "source_row": others["first"],
            "reason": [fnspid.R_NOT_UNIVERSE] * others.height,
            "raw": raws,
            "rows": others["rows"],
        },
        schema={"source_file": pl.Utf8, "source_row": pl.Int64, "reason": pl.Utf8, "raw": pl.Utf8, "rows": pl.Int64},
    )


def load_news(
    paths,
    universe_tickers: set[str],
    dates_only: bool = True,
    *,
    clock: fnspid.NewsClock | None = None,
    calendar_end: dt.date | None = None,
    calendar_start: dt.date | None = None,
) -> LoadResult:
    """Read FNSPID news files into ``news_raw`` rows plus quarantine, in memory.

    The same streaming loader as the ``news_raw`` asset (:func:`stage_news`), staged
    in a temporary folder and gathered: use it for files that fit in memory once loaded.

    Parameters
    ----------
    paths : str, Path or list of them
        Files, globs or directories (their ``*.csv`` / ``*.parquet``), read in sorted order.
    universe_tickers : set of str
        Tickers kept; other rows are quarantined (one summary row per file and ticker).
    dates_only : bool
        Read every stamp as a date (published after that day's close): the default, because
        FNSPID's time-of-day offsets are wrong. Shorthand for ``clock=NewsClock(dates_only)``.
    clock : NewsClock, optional
        Whose time of day is trusted (overrides ``dates_only``).
    calendar_end : date, optional
        The last decision day of the run's calendar: rows decided after it are quarantined
        rather than accepted into partitions that will never exist.
    calendar_start : date, optional
        The calendar's first day: rows decided before it are quarantined the same way.

    Returns
    -------
    LoadResult
        ``accepted`` has the NEWS_RAW columns plus ``date`` (decision day), sorted by
        (public_time, news_id). One quarantine reason per row, first failing check in the order:
        ticker not in universe (summarised per file and ticker), Date missing/unparseable,
        missing Stock_symbol, missing title and url, public time outside the calendar, decision
        day after ``calendar_end``, duplicate (ticker, url, source_time) of an earlier accepted
        row. ``flags``: accepted rows whose non-UTF-8 bytes were replaced by U+FFFD.

    Raises
    ------
    SourceError
        A file that is not a news file, or a CSV that does not parse (naming the line).
    """
    clock = clock or fnspid.NewsClock(dates_only=dates_only)
    files = expand_paths(paths, ("*.csv", "*.parquet", "*.csv.gz"))
    with tempfile.TemporaryDirectory(prefix="finrag-news-") as tmp:
        return stage_news(files, universe_tickers, clock, Path(tmp), calendar_end=calendar_end, calendar_start=calendar_start).load_all()


__all__ = ["NewsStage", "load_news", "settings_key", "stage_news"]
