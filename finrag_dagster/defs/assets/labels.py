"""Residual labels per decision day (seed 000 §3.4): pending until close(D+h) is in prices."""

import dagster as dg
import numpy as np
import polars as pl

from ...core.labels import labels_from_lake
from ..context import days_of
from ..kit import daily_asset
from ..reporting import SCHEMA_CHECK, check_schema, partition_meta, report_partition_rows
from ..resources import FinragResource


def build_labels_asset(partitions_def) -> dg.AssetsDefinition:
    @daily_asset(
        "labels",
        "feedback",
        partitions_def,
        kinds=("parquet", "statsmodels"),
        checks=[SCHEMA_CHECK],
        # labels(D) reads prices D-271 .. D+5; declared as the same day's prices only, because Dagster
        # follows a window mapping downstream: a backfill of prices over days a..b would also target
        # the labels of b+1 .. b+271. Horizons that mature later are re-materialised by the
        # matured_feedback sensor.
        deps=["prices", "universe"],
        description=(
            "Residual-impact label per ticker, decision day D and horizon (seed 000 eqs 1-3): OLS of overlapping "
            "h-day returns on QQQ over sessions D-271..D-20 (>= 120 obs), z = epsilon/sigma, y at +-1. "
            "Reads prices of sessions D-271 .. D+5. Rows stay `pending` until close(D+h) is in prices; the "
            "matured_feedback sensor re-materialises a partition as each horizon matures."
        ),
    )
    def labels(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s = finrag.settings()
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        lab = labels_from_lake(lake, cal, s, days)
        counts = lake.write_partitions("labels", lab, days)
        status = dict(lab.group_by("status").len().sort("status").rows())
        mix = {}
        for (h,), g in lab.filter(pl.col("status") == "ok").group_by(["horizon"]):
            mix[h] = {str(y): round(float(np.mean(g["y"].to_numpy() == y)), 3) for y in (1, 0, -1)}
        meta = partition_meta(
            counts,
            lab.filter(pl.col("status") == "ok").head(20),
            lake,
            "labels",
            columns=["date", "ticker", "horizon", "status", "beta", "sigma", "z", "y"],
        )
        report_partition_rows(context, counts)
        meta["status_counts"] = dg.MetadataValue.json(status)
        meta["label_mix_ok"] = dg.MetadataValue.json(dict(sorted(mix.items())))
        return dg.MaterializeResult(metadata=meta, check_results=[check_schema(lake, "labels", days)])

    return labels
