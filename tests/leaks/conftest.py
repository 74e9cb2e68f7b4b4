"""The leak suite's shared results and its kill-ratio line in the terminal summary."""

from __future__ import annotations

import pytest

from tests.leaks.plant import LEAKS

RESULTS: dict[str, dict] = {}  # leak name -> {"caught": bool, "by": failing test or None, "seconds": float, "why": str}


@pytest.fixture(scope="session")
def leak_results() -> dict[str, dict]:
    return RESULTS


def kill_ratio() -> tuple[int, int]:
    return sum(1 for r in RESULTS.values() if r["caught"]), len(RESULTS)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not RESULTS:
        return
    caught, planted = kill_ratio()
    tr = terminalreporter
    tr.section("planted point-in-time leaks")
    for name, r in RESULTS.items():
        status = "caught" if r["caught"] else "SURVIVED"
        tr.write_line(f"{status:8s} {name:45s} {r['seconds']:6.1f}s  {r['by'] or r['why']}")
    not_run = len(LEAKS) - planted
    tr.write_line(f"planted-leak kill ratio: {caught}/{planted}" + (f" ({not_run} of {len(LEAKS)} leaks not run)" if not_run else ""))
