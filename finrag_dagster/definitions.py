"""The one ``Definitions`` object (workspace.yaml and ``dagster dev -m`` point here), built from the
settings ``$FINRAG_CONFIG`` names. Code that builds its own imports :func:`~finrag_dagster.defs.build.build_definitions`
from defs/build.py: importing this module builds these definitions."""

from __future__ import annotations

from .defs.build import build_definitions

defs = build_definitions()
