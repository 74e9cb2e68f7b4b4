"""The Dagster layer: thin assets over finrag_dagster.core, resources, partitions, sensors."""

import warnings

import dagster as dg

# BackfillPolicy and asset-check severities are marked beta/preview in Dagster 1.13; we use them
# deliberately (single-run backfills are the point of the design), so keep the log readable.
warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)
