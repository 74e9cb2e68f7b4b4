"""Where the daily loop stands, read from the lake alone (what `finrag status` prints)."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass, field

import polars as pl

from .storage.lake import DamagedLakeFile, Lake


@dataclass
class LakeStatus:
    lake: str
    last_market_day: str | None  # last trading day with a bar for the market proxy
    last_decision_day: dict[str, str | None]  # table (or family/table) -> last date partition
    pending: list[dict] = field(default_factory=list)  # horizon, decision days, first/last maturity day
    next_maturity: str | None = None  # the first day on which a pending horizon matures
    quarantine: list[dict] = field(default_factory=list)  # source table, rows, written at, top reason
    damaged: list[dict] = field(default_factory=list)  # file, why, what to do: partition files that cannot be read
    interrupted_writes: list[str] = field(default_factory=list)  # temp files a killed writer left beside a partition

    def to_dict(self) -> dict:
        return asdict(self)


def last_market_day(lake: Lake, market: str) -> str | None:
    """The last trading day with a bar for the market proxy in the lake's prices."""
    for d in reversed(lake.materialized_dates("prices")):
        try:
            tickers = lake.read("prices", dates=[d], columns=["ticker"])["ticker"].to_list()
        except DamagedLakeFile:
            continue  # listed under ``damaged``
        if market in set(tickers):
            return d
    return None


def _last(lake: Lake, table: str, **keys) -> str | None:
    ds = lake.materialized_dates(table, **keys) if lake.has_table(table) else []
    return ds[-1] if ds else None


def pending_horizons(lake: Lake) -> list[dict]:
    """Labels still waiting for close(D+h): per horizon, how many decision days and when they mature."""
    if not lake.has_table("labels"):
        return []
    con = lake.duckdb(tables=["labels"])
    rows = con.execute(
        "SELECT horizon, count(DISTINCT date), min(date), max(date), min(maturity_day), max(maturity_day) "
        "FROM labels WHERE status = 'pending' GROUP BY horizon ORDER BY horizon"
    ).fetchall()
    con.close()
    return [
        {"horizon": h, "decision_days": n, "first_day": str(a), "last_day": str(b), "first_maturity": str(m0), "last_maturity": str(m1)}
        for h, n, a, b, m0, m1 in rows
    ]


def _top(df: pl.DataFrame, col: str, weight: pl.Expr) -> str:
    """The most common value of ``col`` with its count, "" for an empty frame."""
    if not df.height:
        return ""
    top = df.group_by(col).agg(weight.alias("len")).sort(["len", col], descending=[True, False]).head(1)
    return f"{top[col][0]} ({top['len'][0]})"


def quarantine_summary(lake: Lake) -> list[dict]:
    """Per source table: quarantined rows, when that table was last written, the most common reason;
    the rows it flagged (kept, for review) and the most common flag."""
    flags = {f.parent.name.split("=", 1)[1]: f for f in lake.partition_files("source_flags")} if lake.has_table("source_flags") else {}
    out = []
    for f in lake.partition_files("quarantine"):
        table = f.parent.name.split("=", 1)[1]
        try:
            df = pl.from_arrow(lake.read_parquet(f))
            fl = pl.from_arrow(lake.read_parquet(flags[table])) if table in flags else pl.DataFrame({"flag": []}, schema={"flag": pl.Utf8})
        except DamagedLakeFile:
            continue  # listed under ``damaged``
        out.append(
            {
                "source_table": table,
                "rows": int(df["rows"].sum()) if df.height and "rows" in df.columns else df.height,
                "written_at": dt.datetime.fromtimestamp(lake.file_stamp(f)[1] / 1e9, dt.timezone.utc).isoformat(timespec="seconds"),
                "top_reason": _top(df, "reason", pl.col("rows").sum() if "rows" in df.columns else pl.len()),
                "flagged": fl.height,
                "top_flag": _top(fl, "flag", pl.len()),
            }
        )
    return out


def damaged_files(lake: Lake) -> list[dict]:
    """Every partition file of the lake that is not a whole parquet file, with what to do about it."""
    return [{"table": t, "file": lake.url(f), "why": why, "message": str(lake.damaged(f, why=why))} for t, f, why in lake.damaged_files()]


def lake_status(lake: Lake, market: str, families: list[str] | tuple[str, ...]) -> LakeStatus:
    last = {t: _last(lake, t) for t in ("news_raw", "evidence", "anchors", "candidates", "labels")}
    for f in families:
        if lake.has_table("reader_outputs"):
            variants = {p.relative_to(lake.root / "reader_outputs").parts[0].split("=", 1)[1] for p in lake.partition_files("reader_outputs")}
            names = sorted(v for v in variants if v == f or v.startswith(f + "_s"))
            days = [_last(lake, "reader_outputs", variant=v) for v in names]
            days = [d for d in days if d]
            last[f"{f}/reader_outputs"] = min(days) if days else None  # the family is as far as its slowest seed
        else:
            last[f"{f}/reader_outputs"] = None
    damaged = damaged_files(lake)
    # DuckDB reads every labels file at once: with a damaged one the pending horizons are unknown
    pend = [] if any(d["table"] == "labels" for d in damaged) else pending_horizons(lake)
    nxt = min((p["first_maturity"] for p in pend), default=None)
    st = LakeStatus(lake.location(), last_market_day(lake, market), last, pend, nxt, quarantine_summary(lake))
    st.damaged, st.interrupted_writes = damaged, lake.leftover_temp_files()
    return st
