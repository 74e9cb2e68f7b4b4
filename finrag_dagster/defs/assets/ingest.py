"""Sources: the embedded world, the universe, and the raw tables partitioned by trading day."""


import json
import time

import dagster as dg
import polars as pl

from ...core.schemas import TABLES
from ...sources.base import FLAG_COLUMNS, LoadResult
from ...sources.registry import load_membership_frame, load_table, load_universe_frame, rows_in_files
from ..context import days_of
from ..reporting import check_schema, partition_meta
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

        s = finrag.settings()
        ws = s.world.model_copy(
            update={k: v for k, v in {"seed": config.seed, "n_tickers": config.n_tickers}.items() if v is not None}
        )
        out = s.world_dir
        stamp = out / "world_settings.json"
        want = json.dumps(ws.model_dump(mode="json"), sort_keys=True)
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
    @dg.asset(
        name="universe",
        group_name="sources",
        kinds={"parquet"},
        deps=deps,
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
                "membership": (f"{mem.height} intervals from {s.sources.membership}" if mem is not None
                               else "none: today's list, survivorship bias (set sources.membership)"),
                "preview": dg.MetadataValue.md(_md(df)),
            }
        )

    return universe


def _md(df: pl.DataFrame) -> str:
    from ..reporting import preview_md

    return preview_md(df, n=10)


def write_quarantine(lake, res: LoadResult) -> int:
    q = res.quarantine
    _, n = lake.write("quarantine", q, source_table=res.table)
    return n


def build_raw_asset(table: str, partitions_def, description: str) -> dg.AssetsDefinition:
    @dg.asset(
        name=table,
        group_name="sources",
        kinds={"parquet"},
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=["universe"],
        description=description,
        check_specs=[
            dg.AssetCheckSpec("rows_reconcile", asset=table, description="rows in = accepted + quarantined, and rows in = the rows counted in the files without the loader (news, prices)"),
            dg.AssetCheckSpec("schema", asset=table, description="written files carry the declared schema"),
        ],
    )
    def _raw(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        lake = finrag.lake()
        days = days_of(context)
        universe = lake.read("universe")
        res = load_table(finrag.settings(), table, universe)
        nq = write_quarantine(lake, res)
        _, nflags = lake.write("source_flags", res.flags.select(list(FLAG_COLUMNS)), source_table=table)
        lo, hi = days[0], days[-1]
        acc = res.accepted
        in_range = acc.filter((pl.col("date") >= pl.lit(lo).str.to_date()) & (pl.col("date") <= pl.lit(hi).str.to_date()))
        counts = lake.write_partitions(table, in_range, days)
        reasons = res.quarantine.group_by("reason").len().sort("len", descending=True).head(10).rows()
        in_files = rows_in_files(finrag.settings(), table)
        reconcile = dg.AssetCheckResult(
            check_name="rows_reconcile",
            passed=res.rows_in == res.accepted.height + res.quarantine.height and in_files in (None, res.rows_in),
            metadata={"rows_in": res.rows_in, "accepted": res.accepted.height, "quarantined": res.quarantine.height,
                      "rows_in_files": in_files if in_files is not None else "not counted (filings merge several sources)"},
        )
        meta = partition_meta(counts, in_range, lake, table)
        meta.update(
            {
                "source_rows_in": res.rows_in,
                "source_rows_accepted": res.accepted.height,
                "source_rows_quarantined": nq,
                "accepted_outside_these_partitions": acc.height - in_range.height,
                "quarantine_reasons": dg.MetadataValue.json([[r, n] for r, n in reasons]),
                "source_rows_flagged": nflags,
                "flags": dg.MetadataValue.json(res.flags.group_by("flag").len().sort("flag").rows()),
                "quarantine_path": dg.MetadataValue.path(str(lake.path("quarantine", source_table=table))),
            }
        )
        return dg.MaterializeResult(metadata=meta, check_results=[reconcile, check_schema(lake, table, days)])

    return _raw


RAW_DESCRIPTIONS = {
    "prices": "Daily bars (adjusted close), QQQ included, one partition per trading day; one source file per ticker.",
    "news_raw": "News rows (FNSPID columns) by decision day: first close at or after public_time; date-only rows count as published after that day's close.",
    "filings_raw": "EDGAR 8-K/10-Q/10-K filings by acceptance time (never the filing date), with text when available.",
}


def raw_tables() -> list[str]:
    return [t for t in RAW_DESCRIPTIONS if t in TABLES]
