"""The ``finrag`` command: ``main`` (commands, settings and errors), ``fetch`` (EDGAR downloads),
``replay`` (a landing folder fed day by day) and ``errors`` (one paragraph per failure)."""

from .main import DAGSTER_YAML, app, lake_lock, main

__all__ = ["DAGSTER_YAML", "app", "lake_lock", "main"]
