"""Every lake table of finrag, and the lake that knows them.

Each table is declared where it is written: the source, evidence and experience-tree tables in
:mod:`.storage.schemas`, the later stages' tables next to the code that writes them, and each SQL
model in the header of its file (``finrag_dagster/dbt_like_sql/*.sql``). This module, at the top of
``core``, collects them in pipeline order into the package's :class:`~.storage.catalog.Catalog`;
the storage layer below knows no table of its own (a :class:`~.storage.lake.Lake` looks tables up
in the catalog it is given), so no module under ``storage`` imports the stages above it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import lru_cache

from .evaluation.tables import EVALUATION, PORTFOLIO_DAILY, SENSITIVITY
from .experience.loop import PRINCIPLE_SELECTIONS, PRINCIPLE_UPDATES
from .experience.task import TASK_RESULTS, TASK_SCORES
from .labels import LABELS
from .loop import CONTEXTS
from .memory.feedback import FEEDBACK
from .memory.source_memory import MEMORY_SNAPSHOT
from .reader.cache import READER_CACHE
from .reader.run import READER_OUTPUTS
from .retrieval.candidates import CANDIDATES
from .storage import lake as _storage
from .storage import schemas as S
from .storage.catalog import Catalog
from .storage.schemas import TableSpec
from .storage.sqlmodels import SQL_DIR, load_models

DECLARED: tuple[TableSpec, ...] = (
    S.UNIVERSE,
    S.MEMBERSHIP,
    S.NEWS_RAW,
    S.PRICES,
    S.FILINGS_RAW,
    S.QUARANTINE,
    S.SOURCE_FLAGS,
    S.EVIDENCE,
    S.ANCHORS,
    S.CONTEXT_CARDS,
    CANDIDATES,
    LABELS,
    S.EXPERIENCE_TREE,
    S.EXPERIENCE_LEAVES,
    MEMORY_SNAPSHOT,
    CONTEXTS,
    READER_CACHE,
    READER_OUTPUTS,
    PRINCIPLE_SELECTIONS,
    PRINCIPLE_UPDATES,
    FEEDBACK,
    EVALUATION,
    SENSITIVITY,
    PORTFOLIO_DAILY,
    TASK_SCORES,
    TASK_RESULTS,
)  # every table declared in Python, in pipeline order


@lru_cache(maxsize=1)
def package_catalog() -> Catalog:
    """The declared tables, then the SQL models shipped with the package."""
    return Catalog([*DECLARED, *(m.spec for m in load_models(SQL_DIR))])


class Lake(_storage.Lake):
    """A lake of finrag's tables: :class:`~.storage.lake.Lake` with the package's catalog unless given another."""

    def __init__(self, root: str | os.PathLike, catalog: Mapping[str, TableSpec] | None = None, *, work: str | os.PathLike | None = None):
        super().__init__(root, package_catalog() if catalog is None else catalog, work=work)


def open_lake(s) -> Lake:
    """The lake of a settings object: its tables at ``lake_uri`` (or ``lake_dir``), working files in ``lake_dir``."""
    return Lake(s.lake_uri or s.lake_dir, work=s.lake_dir)


__all__ = ["DECLARED", "Lake", "open_lake", "package_catalog"]
