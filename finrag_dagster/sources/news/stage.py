"""The staged news of a set of files (:class:`NewsStage`), read back table by table in bounded
memory; duplicates are found across staged files when the stage is read."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ..base import FLAG_COLUMNS, LoadResult, empty_flags, empty_quarantine
from .columns import R_DUPLICATE, R_NOT_UNIVERSE
from .rows import _empty_news

KEY_COLUMNS = ["ticker", "url", "_ts_ns", "source_file", "source_row"]


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
            return _empty_news()
        df = pl.concat([pl.read_parquet(f) for f in files], how="vertical")
        df = df.filter(pl.col("date").is_between(lo, hi))
        dups = self.duplicates()
        if dups.height:
            df = df.join(dups, on=["source_file", "source_row"], how="anti")
        cols = _empty_news().columns
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
                    pl.lit(R_DUPLICATE).alias("reason"),
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
        acc = self.accepted_between(*span) if span else _empty_news()
        return LoadResult("news_raw", acc, self.quarantine(), self.rows_in, self.flags()).check()


def _months(lo: dt.date, hi: dt.date):
    y, m = lo.year, lo.month
    while (y, m) <= (hi.year, hi.month):
        yield y, m
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)


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
            "reason": [R_NOT_UNIVERSE] * others.height,
            "raw": raws,
            "rows": others["rows"],
        },
        schema={"source_file": pl.Utf8, "source_row": pl.Int64, "reason": pl.Utf8, "raw": pl.Utf8, "rows": pl.Int64},
    )
