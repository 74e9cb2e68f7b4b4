"""pytest plugin: plant one point-in-time leak for the whole session.

Load it with ``-p tests.leaks.plugin``. It does nothing unless ``FINRAG_PLANTED_LEAK`` names a leak
of :data:`tests.leaks.plant.LEAKS` (or ``__null__``: every leak's null mutation at once, see
:class:`tests.leaks.plant.Patcher`). The leak is applied in ``pytest_configure``, before any test
module is imported (so ``from x import f`` in a test module gets the leaky ``f``), and undone when
the session ends. With ``FINRAG_PLANTED_LEAK_REPORT`` set, the plugin writes there (JSON) what it
patched and how each failing test failed (phase and exception type), so the caller can tell a
caught leak from a plugin that never loaded or a plant that crashes. An unknown name or a plant
that no longer fits the code is a usage error (exit code 4), never a silent no-op.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.leaks.plant import ENV, LEAKS, NULL, REPORT_ENV, Patcher, PlantError

_KEY = pytest.StashKey[dict]()


def _write(config: pytest.Config) -> None:
    path = os.environ.get(REPORT_ENV)
    if path and _KEY in config.stash:
        with open(path, "w") as f:
            json.dump(config.stash[_KEY], f, indent=1)


def pytest_configure(config: pytest.Config) -> None:
    name = os.environ.get(ENV, "").strip()
    if not name:
        return
    if name != NULL and name not in LEAKS:
        raise pytest.UsageError(f"{ENV}={name!r} is not a planted leak; known: {', '.join(LEAKS)} (or {NULL})")
    p = Patcher(null=name == NULL)
    try:
        for leak in LEAKS.values() if name == NULL else [LEAKS[name]]:
            leak.apply(p)
    except PlantError as e:
        p.undo()
        raise pytest.UsageError(f"planted leak {name!r} could not be applied: {e}") from None
    if not p.patched:
        raise pytest.UsageError(f"planted leak {name!r} patched nothing")
    config.add_cleanup(p.undo)
    config.stash[_KEY] = {"leak": name, "patched": p.patched, "failures": []}
    _write(config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    rep = yield
    if rep.failed and _KEY in item.config.stash:
        exc = call.excinfo.typename if call.excinfo is not None else ""
        item.config.stash[_KEY]["failures"].append({"nodeid": item.nodeid, "when": rep.when, "exception": exc})
        _write(item.config)
    return rep


def pytest_report_header(config: pytest.Config) -> str | None:
    if _KEY not in config.stash:
        return None
    st = config.stash[_KEY]
    return f"PLANTED LEAK {st['leak']}: " + "; ".join(st["patched"])
