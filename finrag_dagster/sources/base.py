"""What every source loader returns: accepted rows, quarantined rows, and the count read."""

from __future__ import annotations

import glob
import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ..core.text import stable_hash

QUARANTINE_COLUMNS = {"source_file": pl.Utf8, "source_row": pl.Int64, "reason": pl.Utf8, "raw": pl.Utf8, "rows": pl.Int64}
# Rows kept but worth a look (a repaired encoding, an unexplained price move, a missing session).
FLAG_COLUMNS = {"source_file": pl.Utf8, "source_row": pl.Int64, "ticker": pl.Utf8, "date": pl.Date, "flag": pl.Utf8, "detail": pl.Utf8}


def empty_flags() -> pl.DataFrame:
    return pl.DataFrame(schema=FLAG_COLUMNS)


class SourceError(ValueError):
    """A source file cannot be read at all (missing, wrong format): a clear error, not a guess."""


@dataclass
class LoadResult:
    """Rows of one target lake table.

    ``accepted`` has exactly the table's declared columns plus ``date`` (pl.Date: the decision
    day, or the bar date for prices); ``quarantine`` has :data:`QUARANTINE_COLUMNS`.
    A quarantine row stands for ``rows`` source rows: 1, except a summary row (news rows of a
    ticker outside the universe: one row per file and ticker, at the first such row).
    Invariant: ``rows_in == len(accepted) + sum(quarantine.rows)``. ``flags`` (:data:`FLAG_COLUMNS`)
    names accepted rows that were kept but deserve a look; a flag never drops a row.
    """

    table: str
    accepted: pl.DataFrame
    quarantine: pl.DataFrame
    rows_in: int
    flags: pl.DataFrame = field(default_factory=empty_flags)

    @property
    def quarantined(self) -> int:
        """Source rows quarantined (the sum of ``rows``)."""
        return quarantined_rows(self.quarantine)

    def check(self) -> LoadResult:
        got = self.accepted.height + self.quarantined
        if got != self.rows_in:
            raise AssertionError(f"{self.table}: rows in {self.rows_in} != accepted {self.accepted.height} + quarantined {self.quarantined}")
        return self


def quarantined_rows(quarantine: pl.DataFrame) -> int:
    """Source rows a quarantine frame stands for."""
    return int(quarantine["rows"].sum()) if quarantine.height else 0


def empty_quarantine() -> pl.DataFrame:
    return pl.DataFrame(schema=QUARANTINE_COLUMNS)


def quarantine_rows(df: pl.DataFrame, reason: str | pl.Expr, source_file: str | None = None) -> pl.DataFrame:
    """Turn offending rows into quarantine rows (``raw`` is the row as JSON).

    ``df`` must carry ``source_file`` (unless given) and ``source_row`` columns.
    """
    if df.height == 0:
        return empty_quarantine()
    payload = df.drop([c for c in ("source_file", "source_row") if c in df.columns])
    raws = [json.dumps(r, default=str, sort_keys=True) for r in payload.to_dicts()]
    out = df.select(
        (pl.lit(source_file) if source_file is not None else pl.col("source_file")).cast(pl.Utf8).alias("source_file"),
        pl.col("source_row").cast(pl.Int64),
        (reason if isinstance(reason, pl.Expr) else pl.lit(reason)).cast(pl.Utf8).alias("reason"),
    ).with_columns(pl.Series("raw", raws, dtype=pl.Utf8), pl.lit(1, dtype=pl.Int64).alias("rows"))
    return out


def stable_id(prefix: str, *parts: object) -> str:
    """Deterministic short id from its parts (sha1, 16 hex chars)."""
    return prefix + stable_hash(*parts)


def expand_paths(paths, dir_patterns: tuple[str, ...] = ("*.csv", "*.parquet")) -> list[Path]:
    """Files named by paths or globs (a directory means its files matching ``dir_patterns``,
    recursively), de-duplicated and in sorted order.

    Raises
    ------
    SourceError
        When a path or glob matches no file.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    found: set[Path] = set()
    for raw in paths:
        p = str(Path(str(raw)).expanduser())
        if glob.has_magic(p):
            hits = [Path(h) for h in glob.glob(p, recursive=True)]
        else:
            hits = [Path(p)] if Path(p).exists() else []
        files: list[Path] = []
        for h in hits:
            if h.is_dir():
                files += [f for pat in dir_patterns for f in h.rglob(pat) if f.is_file()]
            elif h.is_file():
                files.append(h)
        if not files:
            raise SourceError(f"source path {raw!s} matches no file")
        found.update(f.resolve() for f in files)
    return sorted(found, key=str)


def bom_encoding(data: bytes) -> str | None:
    """The encoding a byte-order mark at the start of ``data`` names (UTF-8, UTF-16 or UTF-32), or None."""
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "utf-32"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    return "utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else None
