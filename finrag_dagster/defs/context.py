"""Small helpers for asset bodies."""

from __future__ import annotations

from contextlib import contextmanager

import dagster as dg

from ..core.errors import StepError


def days_of(context: dg.AssetExecutionContext) -> list[str]:
    """The trading days (partition keys, ascending) this run covers: one or a whole range."""
    if not context.has_partition_key and not context.has_partition_key_range:
        raise dg.Failure("this asset is partitioned by trading day: choose partitions to materialise")
    return sorted(context.partition_keys)


@contextmanager
def step_errors_as_failures():
    """Report a core :class:`~finrag_dagster.core.errors.StepError` (a missing input, settings that
    rule the step out) as the asset's ``dagster.Failure`` with the same message."""
    try:
        yield
    except StepError as e:
        raise dg.Failure(str(e), allow_retries=False) from None  # a bad input or setting: retrying will not help
