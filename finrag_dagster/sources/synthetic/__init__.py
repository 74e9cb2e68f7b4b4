"""The embedded synthetic world: the default data source of ``make demo``.

Deterministic from a seed, no download. Files are written in the real formats (FNSPID news
CSV, FNSPID price CSV, SEC submissions JSON, sec-edgar-downloader ``full-submission.txt``) so
the pipeline reads them through the same loaders as real data; the planted ground truth is
written apart under ``truth/`` for tests. See docs/synthetic_world.md.
"""

from .world import WorldManifest, generate_world

__all__ = ["WorldManifest", "generate_world"]
