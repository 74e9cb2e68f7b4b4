"""A catalog: table name -> spec, handed to the lake.

finrag's own catalog is assembled in :mod:`finrag_dagster.core.tables`, above the stages that
declare the tables; a :class:`~finrag_dagster.core.storage.lake.Lake` looks every table up in the
catalog it was given. Nothing registers itself when imported, so the tables the lake knows never
depend on which modules happen to be loaded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

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
