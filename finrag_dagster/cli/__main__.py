"""``python -m finrag_dagster.cli``: the ``finrag`` command."""

from .main import main

main()
