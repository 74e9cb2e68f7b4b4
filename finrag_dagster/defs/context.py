"""Small helpers for asset bodies."""

from __future__ import annotations

import dagster as dg


def days_of(context: dg.AssetExecutionContext) -> list[str]:
    """The trading days (partition keys, ascending) this run covers: one or a whole range."""
    if not context.has_partition_key and not context.has_partition_key_range:
        raise dg.Failure("this asset is partitioned by trading day: choose partitions to materialise")
    return sorted(context.partition_keys)
