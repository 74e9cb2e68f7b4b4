"""Sources: the embedded world, the universe, and the raw tables partitioned by trading day."""

import datetime as dt
import time
from dataclasses import dataclass, field

import dagster as dg
import polars as pl

from ...sources.base import FLAG_COLUMNS, quarantined_rows
from ...sources.registry import load_membership_frame, load_table, load_universe_frame, rows_in_files, stage_news_table
from ..context import days_of
from ..kit import daily_asset, table_asset
from ..reporting import SCHEMA_CHECK, check_schema, partition_meta, report_partition_rows
from ..resources import FinragResource


class WorldConfig(dg.Config):
    """The embedded synthetic world (defaults from settings.world)."""

    seed: int | None = None
    n_tickers: int | None = None
    force: bool = False


def build_world_asset(partitions_def, settings) -> dg.AssetsDefinition:
    @dg.asset(
        name="synthetic_world",
        group_name="sources",
        kinds={"python"},
        description=(
            "The embedded synthetic world (the default source): FNSPID-format news CSVs, price CSVs, "
            "EDGAR submissions JSON and full-submission.txt files under <lake>/_world/raw, and the "
            "planted ground truth under <lake>/_world/truth, which the pipeline never reads."
        ),
    )
    def synthetic_world(context: dg.AssetExecutionContext, config: WorldConfig, finrag: FinragResource) -> dg.MaterializeResult:
        from ...sources.synthetic import generate_world
        from ...sources.synthetic.world import settings_stamp

        s = finrag.settings()
        ws = s.world.model_copy(update={k: v for k, v in {"seed": config.seed, "n_tickers": config.n_tickers}.items() if v is not None})
        out = s.world_dir
        stamp = out / "world_settings.json"
        want = settings_stamp(ws)
        t0 = time.perf_counter()
        reused = stamp.exists() and stamp.read_text() == want and not config.force
        if not reused:
            manifest = generate_world(ws, out)
            stamp.write_text(want)
            context.log.info(f"generated world: {manifest}")
        files = sorted(p for p in (out / "raw").rglob("*") if p.is_file())
        return dg.MaterializeResult(
            metadata={
                "seed": ws.seed,
                "tickers": ws.n_tickers,
                "span": f"{ws.start} .. {ws.end}",
                "raw_files": len(files),
                "reused_existing": reused,
                "seconds": round(time.perf_counter() - t0, 2),
                "path": dg.MetadataValue.path(str(out)),
            }
        )

    return synthetic_world


def build_universe_asset(deps) -> dg.AssetsDefinition:
    @table_asset(
        "universe",
        "sources",
        deps,
        description=(
            "Tickers with company names, aliases, GICS sector and CIK; the market proxy flagged. Without "
            "sources.membership this is today's list (survivorship bias: names delisted before today are "
            "missing); with it, the membership table says when each ticker was in the universe."
        ),
    )
    def universe(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        lake = finrag.lake()
        s = finrag.settings()
        df = load_universe_frame(s)
        _, n = lake.write("universe", df)
        mem = load_membership_frame(s, df)
        if mem is not None:
            lake.write("membership", mem)
        return dg.MaterializeResult(
            metadata={
                "rows": n,
                "sectors": dg.MetadataValue.json(df.group_by("sector").len().sort("sector").rows()),
                "membership": (
                    f"{mem.height} intervals from {s.sources.membership}"
                    if mem is not None
                    else "none: today's list, survivorship bias (set sources.membership)"
                ),
                "preview": dg.MetadataValue.md(_md(df)),
                "dagster/row_count": n,
                "dagster/uri": lake.location("universe"),
            }
        )

    return universe


def _md(df: pl.DataFrame) -> str:
    from ..reporting import preview_md

    return preview_md(df, n=10)


STAGING = "_staging"  # <lake>/_staging/<table>: what the streaming loaders read from the files
CHUNK_DAYS = 31


def _chunks(days: list[str], n: int):
    for i in range(0, len(days), n):
        yield days[i : i + n]


@dataclass
class Written:
    """What one source table's load wrote over a range of partitions, for its checks and metadata."""

    quarantine: pl.DataFrame
    flags: pl.DataFrame
    rows_in: int
    accepted_n: int  # accepted rows over the whole source
    counts: dict[str, int]  # rows written per partition
    preview: pl.DataFrame | None
    in_range_n: int  # accepted rows inside these partitions
    extra: dict = field(default_factory=dict)


def load_and_write(s, table: str, universe: pl.DataFrame, lake, days: list[str]) -> Written:
    """Load ``table``'s source files and write its partitions ``days``: news streamed through its
    staging folder, a month of decision days at a time; the other sources read whole."""
    staged = stage_news_table(s, universe, lake.work / STAGING / table) if table == "news_raw" else None
    if staged is None:
        res = load_table(s, table, universe)
        lo, hi = dt.date.fromisoformat(days[0]), dt.date.fromisoformat(days[-1])
        in_range = res.accepted.filter(pl.col("date").is_between(lo, hi))
        counts = lake.write_partitions(table, in_range, days, keep_same=True)
        return Written(res.quarantine, res.flags, res.rows_in, res.accepted.height, counts, in_range, in_range.height)
    quarantine, flags, accepted_n = staged.quarantine(), staged.flags(), staged.accepted_count()
    counts: dict[str, int] = {}
    preview = None
    for chunk in _chunks(days, CHUNK_DAYS):
        part = staged.accepted_between(dt.date.fromisoformat(chunk[0]), dt.date.fromisoformat(chunk[-1]))
        counts.update(lake.write_partitions(table, part, chunk, keep_same=True))
        preview = part if preview is None or not preview.height else preview
    extra = {
        "source_rows_read_this_run": staged.rows_read,
        "source_files": dg.MetadataValue.json(staged.actions),
        "staged_files_pruned": staged.pruned,
    }
    return Written(quarantine, flags, staged.rows_in, accepted_n, counts, preview, sum(counts.values()), extra)


def build_raw_asset(table: str, partitions_def, description: str) -> dg.AssetsDefinition:
    @daily_asset(
        table,
        "sources",
        partitions_def,
        ["universe"],
        description,
        checks=[
            (
                "rows_reconcile",
                "rows in = accepted + quarantined (the sum of the quarantine's rows), and rows in = the rows "
                "counted in the files without the loader (news and price rows; filings by accession number)",
            ),
            (SCHEMA_CHECK, "written files carry the declared schema"),
        ],
    )
    def _raw(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        lake = finrag.lake()
        days = days_of(context)
        universe = lake.read("universe")
        s = finrag.settings()
        w = load_and_write(s, table, universe, lake, days)
        quarantine, flags, rows_in, accepted_n, counts, preview, in_range_n, extra = (
            w.quarantine,
            w.flags,
            w.rows_in,
            w.accepted_n,
            w.counts,
            w.preview,
            w.in_range_n,
            w.extra,
        )
        quarantined = quarantined_rows(quarantine)
        lake.write("quarantine", quarantine, source_table=table, keep_same=True)
        _, nflags = lake.write("source_flags", flags.select(list(FLAG_COLUMNS)), source_table=table, keep_same=True)
        unchanged = sum(1 for d in days if lake.path(table, date=d) in lake.unchanged)
        reasons = quarantine.group_by("reason").agg(pl.col("rows").sum()).sort(["rows", "reason"], descending=[True, False]).head(10).rows()
        in_files = rows_in_files(s, table, lake.work / STAGING / f"{table}.rowcount.json")
        reconcile = dg.AssetCheckResult(
            check_name="rows_reconcile",
            passed=rows_in == accepted_n + quarantined and in_files == rows_in,
            metadata={"rows_in": rows_in, "accepted": accepted_n, "quarantined": quarantined, "rows_in_files": in_files},
        )
        meta = partition_meta(counts, preview if preview is not None else pl.DataFrame(), lake, table)
        report_partition_rows(context, counts)
        meta.update(
            {
                "source_rows_in": rows_in,
                "source_rows_accepted": accepted_n,
                "source_rows_quarantined": quarantined,
                "quarantine_rows_written": quarantine.height,
                "accepted_outside_these_partitions": accepted_n - in_range_n,
                "partitions_unchanged": unchanged,
                "quarantine_reasons": dg.MetadataValue.json([[r, n] for r, n in reasons]),
                "source_rows_flagged": nflags,
                "flags": dg.MetadataValue.json(flags.group_by("flag").len().sort("flag").rows()),
                "quarantine_path": dg.MetadataValue.path(lake.url(lake.path("quarantine", source_table=table))),
                **extra,
            }
        )
        return dg.MaterializeResult(metadata=meta, check_results=[reconcile, check_schema(lake, table, days)])

    return _raw


RAW_DESCRIPTIONS = {
    "prices": "Daily bars (adjusted close), QQQ included, one partition per trading day; one source file per ticker.",
    "news_raw": "News rows (FNSPID columns) by decision day: first close at or after public_time; date-only rows count as published after that day's close.",
    "filings_raw": "EDGAR 8-K/10-Q/10-K filings by acceptance time (never the filing date), with text when available.",
}
