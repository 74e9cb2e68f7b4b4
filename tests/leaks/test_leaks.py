"""Mutation test of the point-in-time guard (docs/method.md §1): every planted leak must make a test fail.

For each leak of :data:`tests.leaks.plant.LEAKS`, its catcher tests run in a fresh pytest
subprocess with ``-p tests.leaks.plugin`` and ``FINRAG_PLANTED_LEAK=<leak>``: they must fail
(exit code 1), the first failure an AssertionError inside a test. Exit code 0 means the leak
survived; 2-5 (interrupted, internal error, usage error, nothing collected) or an exception in
setup mean the plant or the catcher list is broken — all fail here. Two runs of all the catchers
together must pass: without any leak (plugin loaded, inert), and under the null mutation of every
leak (the plants' recompiled functions without their edits). They show that each failure comes
from the leak's edit, not from a broken catcher or from the planting machinery. The last test
asserts the kill ratio is 100% (printed in the terminal summary as
``planted-leak kill ratio: caught/planted``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.leaks.conftest import PROPERTY, kill_ratio
from tests.leaks.plant import ENV, LEAKS, NULL, REPORT_ENV, catcher_sets

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 300  # one leak's catchers (fast unit tests: seconds)
SLOW_TIMEOUT_S = 1500  # a leak whose catcher is a pipeline test
MEANING = {
    2: "interrupted (a collection error?)",
    3: "internal error",
    4: "usage error (unknown leak, a plant that no longer fits the code, or a missing catcher)",
    5: "no tests collected",
}


def run_pytest(args: list[str], leak: str | None, tmp: Path, timeout: float) -> tuple[int, str, dict | None]:
    """(exit code, output, the plugin's report) of ``python -m pytest`` over ``args`` in the repository."""
    env = {k: v for k, v in os.environ.items() if k not in (ENV, REPORT_ENV)}
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    report = tmp / "plant.json"
    if leak is not None:
        env[ENV] = leak
        env[REPORT_ENV] = str(report)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-rf",
        "-p",
        "no:cacheprovider",
        "-p",
        "tests.leaks.plugin",
        f"--basetemp={tmp / 'basetemp'}",
        *args,
    ]
    try:
        res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return -1, out, None
    rep = json.loads(report.read_text()) if report.exists() else None
    return res.returncode, res.stdout + res.stderr, rep


def _params():
    return [pytest.param(n, marks=[pytest.mark.slow] if leak.slow else [], id=n) for n, leak in LEAKS.items()]


@pytest.mark.parametrize("name", _params())
def test_planted_leak_is_caught(name, tmp_path, leak_results, record_property):
    leak = LEAKS[name]
    t0 = time.monotonic()
    rc, out, rep = run_pytest(leak.catchers, name, tmp_path, SLOW_TIMEOUT_S if leak.slow else TIMEOUT_S)
    secs = time.monotonic() - t0
    fails = (rep or {}).get("failures", [])
    first = fails[0] if fails else None
    why = ""
    if rc == -1:
        why = f"timed out after {secs:.0f}s"
    elif rc == 0:
        why = "LEAK SURVIVED: every catcher passed with the leak planted"
    elif rc != 1:
        why = f"exit code {rc}: {MEANING.get(rc, 'unexpected')}; the plant or its catcher list is broken"
    elif rep is None or rep.get("leak") != name:
        why = "the catchers failed but the plugin reported no planted leak (was tests.leaks.plugin loaded?)"
    elif first is None:
        why = "exit code 1 without a failed test"
    elif first["when"] != "call" or first["exception"] not in leak.expect:
        why = (
            f"{first['nodeid']} failed in {first['when']} with {first['exception'] or 'no exception'}, not {'/'.join(leak.expect)}: "
            "the plant probably crashes the code instead of leaking"
        )
    caught = not why
    leak_results[name] = {"caught": caught, "by": first["nodeid"] if caught else None, "seconds": secs, "why": why}
    record_property(PROPERTY, {"name": name, **leak_results[name]})  # for the summary in the controlling process (xdist)
    assert caught, f"{name}: {why}\n{leak.description}\ncatchers: {leak.catchers}\n--- output tail ---\n{out[-4000:]}"


def _all_fast_catchers() -> list[str]:
    return sorted({c for s in catcher_sets(fast_only=True) for c in s})


def test_catchers_pass_without_a_leak(tmp_path):
    """Every fast catcher together (one run covers each leak's catcher set), plugin loaded, no leak
    set: all pass, so each failure above is the leak's doing. Pipeline catchers of slow leaks are
    checked by the normal suite."""
    rc, out, rep = run_pytest(_all_fast_catchers(), None, tmp_path, TIMEOUT_S * 2)
    assert rep is None, "the plugin must do nothing without FINRAG_PLANTED_LEAK"
    assert rc == 0, f"the catchers fail without any leak (exit code {rc}); fix them first\n{out[-4000:]}"


def test_catchers_pass_under_the_null_mutation_of_every_leak(tmp_path):
    """Every leak planted with its edit left out (the real source recompiled as the plant does it,
    each edit's anchor text still found; wrapper plants skipped): all catchers pass. So a catcher
    fails because of the leak's edit, never because recompiling the function changed it."""
    rc, out, rep = run_pytest(_all_fast_catchers(), NULL, tmp_path, TIMEOUT_S * 2)
    assert rep is not None and rep["leak"] == NULL, f"the null plant did not load (exit code {rc})\n{out[-4000:]}"
    assert rc == 0, f"the catchers fail under the null mutation (exit code {rc}): a plant's machinery changes behaviour\n{out[-4000:]}"


def test_no_product_code_reads_the_leak_variable():
    hits = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "finrag_dagster").rglob("*")
        if p.is_file() and p.suffix in (".py", ".sql", ".toml", ".yaml", ".json") and ENV in p.read_text(errors="replace")
    ]
    assert not hits, f"{ENV} must only be read by tests/leaks/plugin.py: {hits}"


def test_kill_ratio_is_100_percent(leak_results, request):
    caught, planted = kill_ratio()
    selected = sum(1 for item in request.session.items if item.originalname == "test_planted_leak_is_caught")
    if planted < selected:
        pytest.fail(
            f"{selected} leak tests were selected but only {planted} ran in this process: the suite was split across "
            "pytest-xdist workers (the `leaks` xdist_group of tests/conftest.py did not hold; pytest-xdist 3.8's "
            "loadgroup needs pytest < 9.2) and the ratio below would not be the suite's"
        )
    if planted < len(LEAKS):
        pytest.skip(f"only {planted} of {len(LEAKS)} planted leaks ran in this session (kill ratio {caught}/{planted})")
    survivors = [n for n, r in leak_results.items() if not r["caught"]]
    assert caught == planted, f"planted-leak kill ratio {caught}/{planted}; not caught: {survivors}"
