"""The catalog: every lake table's spec, collected in one place and handed to the lake.

A table is declared where it is defined: the source, evidence and experience-tree tables in
:mod:`.schemas`, the later stages' tables next to the code that writes them, and each SQL model
in the header of its file (``finrag_dagster/dbt_like_sql/*.sql``). :func:`declared_specs` lists
the declaring modules, :func:`default_catalog` adds the SQL models, and a
:class:`~finrag_dagster.core.storage.lake.Lake` looks every table up in the catalog it was given (this
one unless told otherwise). Nothing registers itself when imported, so the tables the lake knows
never depend on which modules happen to be loaded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache

from .schemas import TableSpec


class Catalog(Mapping[str, TableSpec]):
    """Table name -> spec, in the order given; a name declared twice must carry the same spec."""

    def __init__(self, specs: Iterable[TableSpec]):
        self._specs: dict[str, TableSpec] = {}
        for spec in specs:
            old = self._specs.get(spec.name)
            if old is not None and old != spec:
                raise ValueError(f"table {spec.name!r} declared twice with different specs")
            self._specs[spec.name] = spec

    def __getitem__(self, name: str) -> TableSpec:
        return self._specs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)


def declared_specs() -> tuple[TableSpec, ...]:
    """Every table declared in Python, in pipeline order (imported here, not at module load, so
    that importing the lake stays light)."""
    from ..evaluation.tables import EVALUATION, PORTFOLIO_DAILY, SENSITIVITY
    from ..experience.loop import PRINCIPLE_SELECTIONS, PRINCIPLE_UPDATES
    from ..experience.task import TASK_RESULTS, TASK_SCORES
    from ..labels import LABELS
    from ..loop import CONTEXTS
    from ..memory.feedback import FEEDBACK
    from ..memory.source_memory import MEMORY_SNAPSHOT
    from ..reader.cache import READER_CACHE
    from ..reader.run import READER_OUTPUTS
    from ..retrieval.candidates import CANDIDATES
    from . import schemas as S

    return (
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
    )


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    """The declared tables, then the SQL models shipped with the package."""
    from .sqlmodels import SQL_DIR, load_models

    return Catalog([*declared_specs(), *(m.spec for m in load_models(SQL_DIR))])
