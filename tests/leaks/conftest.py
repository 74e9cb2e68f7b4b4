"""The leak suite's shared results and its kill-ratio line in the terminal summary.

``RESULTS`` is filled by the leak tests in the process that runs them (a pytest-xdist worker under
``make test``): ``test_kill_ratio_is_100_percent`` asserts on it there. Each leak test also records
its result as a report property, which xdist hands to the controlling process; the summary printed
at the end is built from those reports, so it shows wherever the suite ran.
"""

from __future__ import annotations

import pytest

from tests.leaks.plant import LEAKS

RESULTS: dict[str, dict] = {}  # leak name -> {"caught": bool, "by": failing test or None, "seconds": float, "why": str}
REPORTED: dict[str, dict] = {}  # the same, as received from the test reports (the terminal summary's source)
PROPERTY = "planted_leak"


@pytest.fixture(scope="session")
def leak_results() -> dict[str, dict]:
    return RESULTS


def kill_ratio(results: dict[str, dict] | None = None) -> tuple[int, int]:
    results = RESULTS if results is None else results
    return sum(1 for r in results.values() if r["caught"]), len(results)


def pytest_runtest_logreport(report) -> None:
    if report.when != "call":
        return
    for key, value in getattr(report, "user_properties", ()):
        if key == PROPERTY:
            REPORTED[value["name"]] = value


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not REPORTED:
        return
    caught, planted = kill_ratio(REPORTED)
    tr = terminalreporter
    tr.section("planted point-in-time leaks")
    for name, r in sorted(REPORTED.items(), key=lambda kv: list(LEAKS).index(kv[0]) if kv[0] in LEAKS else 0):
        status = "caught" if r["caught"] else "SURVIVED"
        tr.write_line(f"{status:8s} {name:45s} {r['seconds']:6.1f}s  {r['by'] or r['why']}")
    not_run = len(LEAKS) - planted
    tr.write_line(f"planted-leak kill ratio: {caught}/{planted}" + (f" ({not_run} of {len(LEAKS)} leaks not run)" if not_run else ""))
