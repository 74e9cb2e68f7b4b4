"""The planted-leak section of the terminal summary, built from the leak tests' reports.

Its hooks are imported by ``tests/conftest.py``: under pytest-xdist the controlling process never
collects, so it loads only the conftest files of the paths it was given (``tests``), not
``tests/leaks/conftest.py``; the leak tests' results reach it as report properties.
"""

from __future__ import annotations

from tests.leaks.conftest import PROPERTY, kill_ratio
from tests.leaks.plant import LEAKS

REPORTED: dict[str, dict] = {}  # leak name -> result, as received from the test reports


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
