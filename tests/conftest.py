"""Shared pytest fixtures."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def real_data() -> Path:
    """The real-data development sample (``../shared/data/real`` beside the repository)."""
    path = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "real"
    if not path.is_dir():
        pytest.skip(f"real-data sample not found at {path} (it lives outside the repository)")
    return path
