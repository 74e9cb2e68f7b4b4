"""docs/leaks.md lists exactly the leaks the suite plants (its table is generated from the registry)."""

from tests.leaks.table import DOC, current, render


def test_the_docs_table_is_the_registry():
    table = current(DOC.read_text())
    assert table is not None, "docs/leaks.md lost its generated table"
    assert table == render(), "docs/leaks.md is stale: run `.venv/bin/python -m tests.leaks.table --write`"
