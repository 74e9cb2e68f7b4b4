"""The asset decorator every lake asset shares: a daily asset (one trading-day partition each, a
range run as one single-run backfill) or an unpartitioned one, in its group, with its kinds, deps,
description and checks (by the names of defs/reporting.py). Extra keyword arguments (``pool``,
``retry_policy``, ``code_version``, …) go to ``dagster.asset`` as they are."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import dagster as dg

Check = str | tuple[str, str]  # a check's name, or (name, description)


def _check_specs(name: str, checks: Iterable[Check]) -> list[dg.AssetCheckSpec] | None:
    specs = [dg.AssetCheckSpec(c, asset=name) if isinstance(c, str) else dg.AssetCheckSpec(c[0], asset=name, description=c[1]) for c in checks]
    return specs or None


def table_asset(name: str, group: str, deps: Sequence, description: str, checks: Iterable[Check] = (), kinds=("parquet",), **extra) -> Callable:
    """``dagster.asset`` of an unpartitioned lake table."""
    return dg.asset(
        name=name, group_name=group, kinds=set(kinds), deps=list(deps), description=description, check_specs=_check_specs(name, checks), **extra
    )


def daily_asset(
    name: str,
    group: str,
    partitions_def: dg.PartitionsDefinition,
    deps: Sequence,
    description: str,
    checks: Iterable[Check] = (),
    kinds=("parquet",),
    **extra,
) -> Callable:
    """``dagster.asset`` of a lake table with one partition per trading day; a range run is one run."""
    return table_asset(
        name, group, deps, description, checks, kinds, partitions_def=partitions_def, backfill_policy=dg.BackfillPolicy.single_run(), **extra
    )
