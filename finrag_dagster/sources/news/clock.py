"""When a news row is public: stamps parsed as ISO 8601 into UTC, a precision per row and its public time.

Each row gets a precision (``date``, ``minute`` or ``second``) and a ``public_time``
(:func:`news_public_ns`): a timestamp stands for the end of its precision. Every row is date-only
by default, because FNSPID's offsets are known to be applied the wrong way; a user trusts a
publisher's or a file's clock explicitly (:class:`NewsClock`). The time rules: docs/time.md,
"News (FNSPID)" and "`sources/news/`: design notes".
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import polars as pl

from ...core.calendar import date_only_public_ns

_TZ_SUFFIX = re.compile(r"\s*(?:UTC|GMT|Z)$", re.IGNORECASE)
_NO_OFFSET = re.compile(r"^(?:\.\d+)?\s*$")  # what follows a wall time that gives no offset
_WALL = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2}))?)?")
_DAY_NS = 86_400 * 10**9
_SEC_NS = 10**9
NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class NewsClock:
    """Whose time of day is trusted (docs/method.md §1: a source's clock is trusted only where it is known
    to be right).

    ``dates_only`` (the default) reads every stamp as a date, except rows whose ``Publisher`` is
    in ``trusted_publishers`` (exact, case-insensitive) or whose file name matches one of
    ``trusted_files`` (shell patterns such as ``"aapl*.csv"``). ``dates_only=False`` trusts every
    clock.
    """

    dates_only: bool = True
    trusted_publishers: tuple[str, ...] = ()
    trusted_files: tuple[str, ...] = ()

    def trusted(self, publishers: list[str], files: list[str]) -> np.ndarray:
        """Boolean array: whose time of day is trusted, row by row."""
        n = len(publishers)
        if not self.dates_only:
            return np.ones(n, dtype=bool)
        pubs = {p.strip().lower() for p in self.trusted_publishers if p.strip()}
        file_ok = {f: any(fnmatch.fnmatch(f, pat) for pat in self.trusted_files) for f in set(files)}
        return np.array([(p or "").strip().lower() in pubs or file_ok[f] for p, f in zip(publishers, files)], dtype=bool)

    def describe(self) -> dict:
        return {"dates_only": self.dates_only, "trusted_publishers": sorted(self.trusted_publishers), "trusted_files": sorted(self.trusted_files)}


def parse_news_times(values: list[str | None]) -> np.ndarray:
    """ISO 8601 stamps to int64 UTC nanoseconds (``np.iinfo(int64).min`` where unparseable).

    " UTC" / "GMT" / "Z" suffixes mean +00:00; a stamp without offset is taken as UTC.
    """
    norm = pd.Series([None if v is None else _TZ_SUFFIX.sub("+00:00", str(v).strip()) or None for v in values], dtype=object)
    ts = pd.to_datetime(norm, utc=True, format="ISO8601", errors="coerce")
    return ts.astype("datetime64[ns, UTC]").array.asi8.copy()


def _wall_clock(values: list[str | None]) -> tuple[pl.Series, pl.Series, pl.Series, pl.Series]:
    """The date and seconds since midnight as written in each stamp (its own offset's wall clock),
    whether a stamp with a time of day gives no UTC offset (naive), and whether it gives a time of
    day without seconds (``16:00-05:00``: minute precision, whatever its source's other stamps)."""
    days, secs, naive, no_sec = [], [], [], []
    for v in values:
        m = _WALL.match(v or "")
        day = None
        if m:
            try:
                day = dt.date.fromisoformat(m.group(1))
            except ValueError:
                pass
        if day is None:
            days.append(None)
            secs.append(None)
            naive.append(False)
            no_sec.append(False)
            continue
        days.append(day)
        h, mi, se = (int(g) if g else 0 for g in m.group(2, 3, 4))
        secs.append(h * 3600 + mi * 60 + se)
        naive.append(m.group(2) is not None and _NO_OFFSET.match(v[m.end() :]) is not None)
        no_sec.append(m.group(2) is not None and m.group(4) is None)
    return (
        pl.Series(days, dtype=pl.Date),
        pl.Series(secs, dtype=pl.Int32),
        pl.Series(naive, dtype=pl.Boolean),
        pl.Series(no_sec, dtype=pl.Boolean),
    )


def _clock_parts(frame: pl.DataFrame, clock: NewsClock) -> dict[str, np.ndarray]:
    """Per row: whether the stamp parsed, its UTC ns, its wall-clock day, whether it is read as a
    date only, and whether it is a trusted timed stamp on a whole minute."""
    valid = ~frame["ts_ns"].is_null().to_numpy()
    ts = np.where(valid, frame["ts_ns"].fill_null(0).to_numpy(), 0).astype(np.int64)
    wall_sec = frame["wall_sec"].fill_null(0).to_numpy().astype(np.int64)
    wall_day = frame["wall_day"].to_numpy().astype("datetime64[D]")
    utc_day = (ts // _DAY_NS).astype("datetime64[D]")
    wall_day = np.where(np.isnat(wall_day), utc_day, wall_day)
    has_time = frame["has_time"]
    no_time = has_time.is_not_null().to_numpy() & ~has_time.fill_null(True).to_numpy()
    trusted = clock.trusted(frame["Publisher"].to_list(), frame["source_file"].to_list())
    # a trusted time of day without a UTC offset is ambiguous (New York? UTC?): read as a date, flagged
    stamp_naive = frame["naive"].fill_null(False).to_numpy() if "naive" in frame.columns else np.zeros(len(valid), dtype=bool)
    naive = trusted & ~no_time & (wall_sec != 0) & stamp_naive
    is_date = ~trusted | no_time | (wall_sec == 0) | naive
    timed = valid & ~is_date
    on_minute = (ts % (60 * _SEC_NS)) == 0
    # a stamp written without seconds stands for its whole minute, even in a source that writes seconds
    no_sec = frame["minute_only"].to_numpy()  # never null: normalize_news writes it for every row
    return {
        "valid": valid,
        "ts": ts,
        "wall_day": wall_day,
        "is_date": is_date,
        "timed": timed,
        "on_minute": on_minute,
        "naive": valid & naive,
        "minute_only": timed & no_sec,
    }


def minute_stats(frame: pl.DataFrame, clock: NewsClock) -> pl.DataFrame:
    """Per (source_file, Publisher): trusted timed stamps and how many fall on a whole minute (a
    source is minute-precise when the two are equal, over the whole file)."""
    if frame.height == 0:
        return pl.DataFrame(schema={"f": pl.Utf8, "p": pl.Utf8, "timed": pl.Int64, "on_minute": pl.Int64})
    c = _clock_parts(frame, clock)
    return (
        pl.DataFrame({"f": frame["source_file"], "p": frame["Publisher"], "t": c["timed"], "m": c["timed"] & c["on_minute"]})
        .group_by("f", "p")
        .agg(pl.col("t").sum().cast(pl.Int64).alias("timed"), pl.col("m").sum().cast(pl.Int64).alias("on_minute"))
        .sort("f", "p")
    )


def news_public_ns(frame: pl.DataFrame, clock: NewsClock = NewsClock(), minute: pl.DataFrame | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Public time (int64 UTC ns; :data:`NEVER` where unparseable) and precision ("date",
    "minute", "second") of each row of :func:`normalize_news`'s frame (docs/method.md §1: a timestamp
    stands for the end of its precision; only trusted clocks give a time of day).

    ``minute``: :func:`minute_stats` of the whole file(s) when ``frame`` is only a batch of them
    (minute precision is a property of a whole source); by default it is taken from ``frame``.
    """
    n = frame.height
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object)
    c = _clock_parts(frame, clock)
    valid, ts, wall_day, is_date, timed = c["valid"], c["ts"], c["wall_day"], c["is_date"], c["timed"]
    # minute precision: a trusted source (file, publisher) whose timed stamps all have zero seconds,
    # and any stamp written without seconds
    stats = minute_stats(frame, clock) if minute is None else minute
    src = pl.DataFrame({"f": frame["source_file"], "p": frame["Publisher"]})
    all_minute = (
        src.join(stats, on=["f", "p"], how="left", maintain_order="left")
        .select((pl.col("timed") == pl.col("on_minute")).fill_null(False))
        .to_series()
        .to_numpy()
    )
    is_minute = timed & (all_minute | c["minute_only"])
    public = ts.copy()
    public[is_minute] += 59 * _SEC_NS
    d_idx = np.flatnonzero(valid & is_date)
    if len(d_idx):
        public[d_idx] = date_only_public_ns(wall_day[d_idx])
    public[~valid] = NEVER
    precision = np.where(is_date, "date", np.where(is_minute, "minute", "second")).astype(object)
    return public, precision
