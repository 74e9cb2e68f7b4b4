"""Residual labels per decision day (seed 000 §3.4): pending until close(D+h) is in prices."""

import dagster as dg
import numpy as np
import polars as pl

from ...core.labels import compute_labels
from ..context import days_of
from ..reporting import check_schema, partition_meta
from ..resources import FinragResource


def market_of(s) -> str:
    return s.sources.market_ticker if s.sources.kind == "files" else s.world.market_ticker


def build_labels_asset(partitions_def) -> dg.AssetsDefinition:
    @dg.asset(
        name="labels",
        group_name="feedback",
        kinds={"parquet", "statsmodels"},
        partitions_def=partitions_def,
        backfill_policy=dg.BackfillPolicy.single_run(),
        deps=[
            dg.AssetDep(
                "prices",
                partition_mapping=dg.TimeWindowPartitionMapping(start_offset=-271, end_offset=5, allow_nonexistent_upstream_partitions=True),
            ),
            "universe",
        ],
        description=(
            "Residual-impact label per ticker, decision day D and horizon (seed 000 eqs 1-3): OLS of overlapping "
            "h-day returns on QQQ over sessions D-271..D-20 (>= 120 obs), z = epsilon/sigma, y at +-1. "
            "Rows stay `pending` until close(D+h) is in prices; the matured_feedback sensor re-materialises "
            "a partition as each horizon matures."
        ),
        check_specs=[dg.AssetCheckSpec("schema", asset="labels")],
    )
    def labels(context: dg.AssetExecutionContext, finrag: FinragResource) -> dg.MaterializeResult:
        s = finrag.settings()
        ls = s.labels
        lake, cal = finrag.lake(), finrag.calendar()
        days = days_of(context)
        i0 = cal.session_index(days[0]) - (ls.window + ls.gap)
        i1 = cal.session_index(days[-1]) + 5
        lo = cal.sessions[max(i0, 0)].item()
        hi = cal.sessions[min(i1, len(cal.sessions) - 1)].item()
        prices = lake.read_range("prices", lo, hi, columns=["ticker", "adj_close"])
        uni = lake.read("universe")
        tickers = uni.filter(~pl.col("is_benchmark"))["ticker"].to_list()
        lab = compute_labels(prices, days, cal, market_of(s), tickers, ls.window, ls.gap, ls.min_obs, ls.z_threshold)
        counts = lake.write_partitions("labels", lab, days)
        status = dict(lab.group_by("status").len().sort("status").rows())
        mix = {}
        for (h,), g in lab.filter(pl.col("status") == "ok").group_by(["horizon"]):
            mix[h] = {str(y): round(float(np.mean(g["y"].to_numpy() == y)), 3) for y in (1, 0, -1)}
        meta = partition_meta(counts, lab.filter(pl.col("status") == "ok").head(20), lake, "labels",
                              columns=["date", "ticker", "horizon", "status", "beta", "sigma", "z", "y"])
        meta["status_counts"] = dg.MetadataValue.json(status)
        meta["label_mix_ok"] = dg.MetadataValue.json(dict(sorted(mix.items())))
        return dg.MaterializeResult(metadata=meta, check_results=[check_schema(lake, "labels", days)])

    return labels
