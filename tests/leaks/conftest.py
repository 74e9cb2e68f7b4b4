"""The leak suite's shared results and its kill-ratio line in the terminal summary.

``RESULTS`` is filled by the leak tests in the process that runs them (a pytest-xdist worker under
``make test``): ``test_kill_ratio_is_100_percent`` asserts on it there. Each leak test also records
its result as a report property, which xdist hands to the controlling process; the summary printed
at the end (``tests/leaks/summary.py``, hooked in by ``tests/conftest.py``, the conftest every run
loads) is built from those reports, so it shows wherever the suite ran.
"""

from __future__ import annotations

import pytest

RESULTS: dict[str, dict] = {}  # leak name -> {"caught": bool, "by": failing test or None, "seconds": float, "why": str}
PROPERTY = "planted_leak"


@pytest.fixture(scope="session")
def leak_results() -> dict[str, dict]:
    return RESULTS


def kill_ratio(results: dict[str, dict] | None = None) -> tuple[int, int]:
    results = RESULTS if results is None else results
    return sum(1 for r in results.values() if r["caught"]), len(results)
