"""One Dagster asset per ``finrag_dagster/dbt_like_sql/*.sql`` model; upstream assets come from the SQL."""

import datetime as dt

import dagster as dg

from ...core.storage.sqlmodels import SqlModel, run_model
from ..context import days_of
from ..reporting import SCHEMA_CHECK, check_schema, partition_meta, report_partition_rows
from ..resources import FinragResource


def build_sql_asset(model: SqlModel, partitions_def, table_assets: dict[str, list[dg.AssetKey]] | None = None) -> dg.AssetsDefinition:
    """``table_assets`` maps a lake table to the assets that write it (the per-variant tables are
    written by one asset per variant family); other tables are written by the asset of that name."""
    daily = model.partitioned == "daily"
    deps = []
    for t in model.upstream:
        deps += (table_assets or {}).get(t, [dg.AssetKey(t)])

    @dg.asset(
        name=model.name,
        group_name="sql",
        kinds={"duckdb", "sql"},
        deps=deps,
        partitions_def=partitions_def if daily else None,
        backfill_policy=dg.BackfillPolicy.single_run() if daily else None,
        description=f"{model.description}\n\nSQL model `{model.path.name}`; upstream tables parsed from the SQL: {', '.join(model.upstream)}.",
        metadata={"sql": dg.MetadataValue.md(f"```sql\n{model.sql}\n```"), "file": dg.MetadataValue.path(str(model.path))},
        check_specs=[dg.AssetCheckSpec(SCHEMA_CHECK, asset=model.name)] if daily else None,
    )
    def _sql(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context) if daily else None
        splits = [(name, a, b) for name, (a, b) in finrag.settings().splits.ranges().items()]
        counts = run_model(model, lake, cal, [dt.date.fromisoformat(d) for d in days] if days else None, splits)
        if daily:
            sample = lake.read(model.name, dates=days[-1:])
            meta = partition_meta(counts, sample, lake, model.name)
            report_partition_rows(context, counts)
            return dg.MaterializeResult(metadata=meta, check_results=[check_schema(lake, model.name, days)])
        sample = lake.read(model.name)
        meta = partition_meta(counts, sample, lake, model.name)
        meta["dagster/row_count"] = int(sum(counts.values()))
        return dg.MaterializeResult(metadata=meta)

    return _sql
