"""Metadata every asset attaches: row counts, a preview, quarantine, checks."""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
import polars as pl
import pyarrow as pa

from ..core.formatting import md_table
from ..core.storage.lake import Lake

# the checks every lake asset may carry (one name each, as the UI lists them)
SCHEMA_CHECK = "schema"  # every written partition carries exactly the declared schema
PIT_CHECK = "point_in_time"  # nothing written is public after its decision time (SPEC §1)


def preview_md(df: pl.DataFrame, n: int = 5, columns: list[str] | None = None, width: int = 60) -> str:
    """A small markdown table of the first rows (long strings cut)."""
    if df.height == 0:
        return "_no rows_"
    cols = [c for c in (columns or df.columns) if c in df.columns and c != "embedding"][:8]

    def cell(v) -> str:
        s = ("" if v is None else str(v)).replace("|", "/").replace("\n", " ")
        return s[:width] + ("…" if len(s) > width else "")

    return md_table(cols, [[cell(v) for v in row] for row in df.head(n).select(cols).iter_rows()])


def table_schema(schema: pa.Schema, hive: tuple[str, ...] = ()) -> dg.TableSchema:
    """The catalog's column schema of a lake table: its declared pyarrow columns (type, nullability),
    then its hive keys, which live in the partition's path (``date=…``, ``variant=…``), not in the file."""
    cols = [dg.TableColumn(f.name, str(f.type), constraints=dg.TableColumnConstraints(nullable=f.nullable)) for f in schema]
    cols += [dg.TableColumn(k, "date" if k == "date" else "string", description="partition key (in the file's path)") for k in hive]
    return dg.TableSchema(columns=cols)


def report_partition_rows(context: dg.AssetExecutionContext, counts: Mapping[str, int], asset_key: dg.AssetKey | None = None) -> None:
    """``dagster/row_count`` on each partition's own materialisation: a range run (single-run
    backfill) returns one result for all its partitions, and Dagster merges the metadata added here
    per partition over it, so each partition reports its own rows (the run's total is ``rows_this_run``)."""
    for day, n in counts.items():
        context.add_asset_metadata({"dagster/row_count": int(n)}, asset_key=asset_key, partition_key=str(day))


def partition_meta(counts: dict[str, int], df_preview: pl.DataFrame, lake: Lake, table: str, columns=None) -> dict:
    nonzero = [v for v in counts.values()]
    return {
        "rows_this_run": dg.MetadataValue.int(int(sum(nonzero))),
        "partitions_written": dg.MetadataValue.int(len(counts)),
        "max_rows_per_partition": dg.MetadataValue.int(int(max(nonzero)) if nonzero else 0),
        "preview": dg.MetadataValue.md(preview_md(df_preview, columns=columns)),
        "path": dg.MetadataValue.path(lake.location(table)),
        "dagster/uri": lake.location(table),
    }


def check_schema(lake: Lake, table: str, days: list[str], variants: list[str] | None = None, asset_key=None) -> dg.AssetCheckResult:
    """Every written partition carries exactly the declared schema."""

    spec = lake.spec(table)
    bad = []
    for v in variants or [None]:
        for d in days:
            f = lake.path(table, date=d, **({"variant": v} if v is not None else {}))
            if not lake.is_file(f) or not lake.read_schema(f).remove_metadata().equals(spec.schema):
                bad.append(f"{v}/{d}" if v else d)
    return dg.AssetCheckResult(
        check_name=SCHEMA_CHECK,
        asset_key=asset_key,
        passed=not bad,
        metadata={"partitions_checked": len(days), "failing": ", ".join(bad[:10]) or "none"},
    )
