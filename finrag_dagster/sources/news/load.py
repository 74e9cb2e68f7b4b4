"""Streaming, incremental news ingest: each news file is read once, in bounded memory, into a
staging folder; a re-run reads only files that changed and only the rows appended to a CSV.

A CSV is checked in chunks (:mod:`..csvcheck`), filtered to the universe's tickers by a lazy polars
scan, and its kept rows are shaped in batches of about :data:`BATCH_BYTES` into month files
(:mod:`.segment`); duplicates are found across staged files when the stage is read
(:meth:`.stage.NewsStage.duplicates`). Each file's ``manifest.json`` decides what a re-run reads, and
is replaced atomically, so a crash leaves the previous stage. The steps, the re-run rules and
measurements: docs/ingest.md.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import shutil
import tempfile
import uuid
from pathlib import Path

from ...core.storage.atomic import atomic_file
from ..base import LoadResult, SourceError, expand_paths
from .clock import NewsClock
from .fingerprint import HEAD_BYTES, STAGE_VERSION, TAIL_BYTES, _byte_at, _header_len, _sha, settings_key
from .segment import StageSettings, _stage_segment
from .stage import FileStage, NewsStage

BATCH_BYTES = 48 << 20  # bytes of kept rows checked and shaped at once


def stage_news(
    files: list[Path],
    universe_tickers: set[str],
    clock: NewsClock,
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
    settings = StageSettings(universe=universe, clock=clock, span=span, batch_bytes=batch_bytes)
    root.mkdir(parents=True, exist_ok=True)
    stages, rows_in, rows_read, actions = [], 0, 0, {}
    for path in files:
        fs, read, action = _stage_file(Path(path), settings, root=root, key=key)
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


def _stage_file(path: Path, settings: StageSettings, root: Path, key: str):
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
            appended = _stage_append(path, d, old, settings)
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
            seg, minute = _stage_segment(tmp, path, d, row_offset=0, settings=settings, prior_minute=None)
        finally:
            tmp.unlink(missing_ok=True)
    else:
        seg, minute = _stage_segment(path, path, d, row_offset=0, settings=settings, prior_minute=None)
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


def _stage_append(path: Path, d: Path, old: dict, settings: StageSettings):
    """Stage the bytes appended after ``old["size"]`` as a new segment; None when the whole file
    must be read again (the new rows change how earlier rows were read)."""
    tmp = d / f".append-{uuid.uuid4().hex}.csv"
    try:
        with open(path, "rb") as src, open(tmp, "wb") as out:
            out.write(src.read(old["header_len"]))
            src.seek(old["size"])
            shutil.copyfileobj(src, out, 1 << 24)
        offset = sum(int(s["rows"]) for s in old["segments"])
        seg, minute = _stage_segment(tmp, path, d, row_offset=offset, settings=settings, prior_minute=old["minute"])
    finally:
        tmp.unlink(missing_ok=True)
    if seg is None:
        return None
    manifest = dict(old)
    manifest["segments"] = [*old["segments"], seg]
    manifest["minute"] = minute
    return manifest, int(seg["rows"])


def load_news(
    paths,
    universe_tickers: set[str],
    dates_only: bool = True,
    *,
    clock: NewsClock | None = None,
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
    clock = clock or NewsClock(dates_only=dates_only)
    files = expand_paths(paths, ("*.csv", "*.parquet", "*.csv.gz"))
    with tempfile.TemporaryDirectory(prefix="finrag-news-") as tmp:
        return stage_news(files, universe_tickers, clock, Path(tmp), calendar_end=calendar_end, calendar_start=calendar_start).load_all()
