"""The checks of normalised news rows (a quarantine reason per row), their flags, and the
``news_raw`` columns of the rows accepted (bad rows: docs/bad_inputs.md, "News (FNSPID)")."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import polars as pl

from ...core.storage.schemas import NEWS_RAW
from ..base import FLAG_COLUMNS, empty_flags, stable_id
from .clock import NEVER, NewsClock, _clock_parts, news_public_ns
from .columns import (
    F_NAIVE_TIME,
    F_REPAIRED,
    F_TITLE_FROM_URL,
    R_AFTER_END,
    R_BAD_DATE,
    R_BEFORE_START,
    R_MISSING_DATE,
    R_NO_TICKER,
    R_NO_TITLE_URL,
    R_NOT_UNIVERSE,
    R_OUT_OF_CALENDAR,
    RAW_COLUMNS,
    SUMMARY_COLUMNS,
)
from .fields import _title, pick_summary, slug_title


def _empty_news() -> pl.DataFrame:
    return pl.from_arrow(NEWS_RAW.schema.empty_table()).with_columns(pl.lit(None, dtype=pl.Date).alias("date"))


def check_news_rows(
    df: pl.DataFrame,
    universe: list[str],
    clock: NewsClock,
    cal,
    calendar_end: dt.date | None,
    minute: pl.DataFrame | None = None,
    calendar_start: dt.date | None = None,
) -> pl.DataFrame:
    """:func:`normalize_news` rows with ``ticker``, ``public_ns``, ``precision``, ``naive_time``
    (a trusted time of day without an offset, read as a date) and ``reason`` (null: accepted so
    far; duplicates are found across all files later)."""
    rows_in = df.height
    df = df.with_columns(ticker=pl.col("Stock_symbol").str.to_uppercase())
    public, precision = news_public_ns(df, clock, minute)
    trusting = not clock.dates_only or bool(clock.trusted_publishers or clock.trusted_files)
    naive = _clock_parts(df, clock)["naive"] if trusting and rows_in else np.zeros(rows_in, dtype=bool)
    valid_ts = public != NEVER
    in_cal = valid_ts & (public >= cal.opens_ns[0]) & (public <= cal.closes_ns[-1])
    before_start = np.zeros(rows_in, dtype=bool)
    if calendar_start is not None and in_cal.any():
        idx = np.flatnonzero(in_cal)
        before_start[idx] = cal.decision_days(public[idx]).astype("datetime64[D]") < np.datetime64(calendar_start, "D")
    after_end = np.zeros(rows_in, dtype=bool)
    if calendar_end is not None and in_cal.any():
        end_close = int(
            cal.closes_for(
                np.array([cal.previous_session(calendar_end) if not cal.is_session(calendar_end) else calendar_end], dtype="datetime64[D]")
            )[0]
        )
        after_end = in_cal & (public > end_close)

    df = df.with_columns(
        pl.Series("public_ns", np.where(valid_ts, public, 0), dtype=pl.Int64),
        pl.Series("precision", precision.astype(str), dtype=pl.Utf8),
        pl.Series("in_cal", in_cal, dtype=pl.Boolean),
        pl.Series("after_end", after_end, dtype=pl.Boolean),
        pl.Series("before_start", before_start, dtype=pl.Boolean),
        pl.Series("naive_time", naive, dtype=pl.Boolean),
    )
    reason = (
        pl.when(pl.col("ts_ns").is_null() & (pl.col("Date") == ""))
        .then(pl.lit(R_MISSING_DATE))
        .when(pl.col("ts_ns").is_null())
        .then(pl.lit(R_BAD_DATE))
        .when(pl.col("ticker") == "")
        .then(pl.lit(R_NO_TICKER))
        .when(~pl.col("ticker").is_in(universe))
        .then(pl.lit(R_NOT_UNIVERSE))
        .when((pl.col("Article_title") == "") & (pl.col("Url") == ""))
        .then(pl.lit(R_NO_TITLE_URL))
        .when(~pl.col("in_cal"))
        .then(pl.lit(R_OUT_OF_CALENDAR))
        .when(pl.col("before_start"))
        .then(pl.lit(R_BEFORE_START))
        .when(pl.col("after_end"))
        .then(pl.lit(R_AFTER_END))
        .otherwise(pl.lit(None, dtype=pl.Utf8))
    )
    return df.with_columns(reason.alias("reason"))


def raw_json(df: pl.DataFrame) -> pl.Series:
    """The :data:`RAW_COLUMNS` of each row as JSON (a quarantine row's ``raw``)."""
    return pl.Series("raw", [json.dumps(r, default=str, sort_keys=True) for r in df.select(RAW_COLUMNS).to_dicts()], dtype=pl.Utf8)


def _repair_flags(good: pl.DataFrame, cal) -> pl.DataFrame:
    rep = good.filter(pl.col("repaired"))
    if rep.height == 0:
        return empty_flags()
    days = cal.decision_days(rep["public_ns"].to_numpy()).astype("datetime64[D]")
    return pl.DataFrame(
        {
            "source_file": rep["source_file"],
            "source_row": rep["source_row"],
            "ticker": rep["ticker"],
            "date": pl.Series(days).cast(pl.Date),
            "flag": [F_REPAIRED] * rep.height,
            "detail": ["the file is not valid UTF-8; undecodable bytes in this row were replaced"] * rep.height,
        },
        schema=FLAG_COLUMNS,
    ).sort("source_file", "source_row")


def _title_flags(good: pl.DataFrame, cal) -> pl.DataFrame:
    """``title_from_url`` flags: a row without ``Article_title`` whose title was read from its URL's
    last path segment (kept: the headline is what BM25, the embeddings and the anchor see)."""
    rows = good.filter((pl.col("Article_title") == "") & ~pl.col("slug_title"))
    if rows.height == 0:
        return empty_flags()
    days = cal.decision_days(rows["public_ns"].to_numpy()).astype("datetime64[D]")
    return pl.DataFrame(
        {
            "source_file": rows["source_file"],
            "source_row": rows["source_row"],
            "ticker": rows["ticker"],
            "date": pl.Series(days).cast(pl.Date),
            "flag": [F_TITLE_FROM_URL] * rows.height,
            "detail": [f"no Article_title: the title {slug_title(u)!r} was read from the Url {u!r}" for u in rows["Url"].to_list()],
        },
        schema=FLAG_COLUMNS,
    )


def _naive_flags(good: pl.DataFrame, cal) -> pl.DataFrame:
    """``naive_time`` flags: a trusted source's stamp with a time of day but no UTC offset, read as
    a date (public after that day's close) because its time zone is unknown."""
    rows = good.filter(pl.col("naive_time"))
    if rows.height == 0:
        return empty_flags()
    days = cal.decision_days(rows["public_ns"].to_numpy()).astype("datetime64[D]")
    detail = [
        f"Date {d!r} has a time of day but no UTC offset: read as a date (public after that day's close); "
        "write the offset (e.g. 2021-03-01 14:05:00-05:00) to use its time of day"
        for d in rows["Date"].to_list()
    ]
    return pl.DataFrame(
        {
            "source_file": rows["source_file"],
            "source_row": rows["source_row"],
            "ticker": rows["ticker"],
            "date": pl.Series(days).cast(pl.Date),
            "flag": [F_NAIVE_TIME] * rows.height,
            "detail": detail,
        },
        schema=FLAG_COLUMNS,
    )


def _accepted_frame(good: pl.DataFrame, cal, keep_order: bool = False) -> pl.DataFrame:
    """Build the NEWS_RAW columns (+ date) for rows that passed every check (in their order when
    ``keep_order``, else sorted by public time and id)."""
    titles = [_title(t, s, u) for t, s, u in zip(good["Article_title"], good["slug_title"], good["Url"])]
    summaries = [pick_summary(tuple(s), a) for s, a in zip(zip(*(good[c] for c in SUMMARY_COLUMNS)), good["Article"])]
    src_time = good["ts_ns"].cast(pl.Datetime("ns", "UTC"))
    iso = [t.isoformat() for t in src_time.to_list()]
    ids = [stable_id("N", tk, u, s, ti) for tk, u, s, ti in zip(good["ticker"], good["Url"], iso, titles)]
    decision = cal.decision_days(good["public_ns"].to_numpy())
    out = pl.DataFrame(
        {
            "news_id": ids,
            "ticker": good["ticker"],
            "public_time": good["public_ns"].cast(pl.Datetime("ns", "UTC")).dt.cast_time_unit("us"),
            "source_time": src_time.dt.cast_time_unit("us"),
            "time_precision": good["precision"],
            "title": titles,
            "summary": summaries,
            "article": good["Article"],
            "url": good["Url"],
            "publisher": good["Publisher"],
            "source_file": good["source_file"],
            "source_row": good["source_row"],
            "date": pl.Series(decision.astype("datetime64[D]")).cast(pl.Date),
        }
    )
    schema = _empty_news().schema
    out = out.select([pl.col(c).cast(t) for c, t in schema.items()])
    return out if keep_order else out.sort("public_time", "news_id")
