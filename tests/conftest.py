"""Shared pytest fixtures."""

from pathlib import Path

import pytest

REAL_DATA = Path(__file__).resolve().parent / "data" / "real"


@pytest.fixture(scope="session")
def real_data() -> Path:
    """Small real fixtures carried by the repository (``tests/data/real``): slices of the real-data
    development sample, in its layout; ``tests/data/real/PROVENANCE.md`` says how each was cut."""
    return REAL_DATA
