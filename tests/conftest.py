"""Shared pytest fixtures."""

import os
from pathlib import Path

import pytest

REAL_DATA = Path(__file__).resolve().parent / "data" / "real"


@pytest.fixture(scope="session")
def real_data() -> Path:
    """Small real fixtures carried by the repository (``tests/data/real``): slices of the real-data
    development sample, in its layout; ``tests/data/real/PROVENANCE.md`` says how each was cut."""
    return REAL_DATA


RAY_AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def _reread_ray_auth() -> None:
    """Make this process's Ray read its authentication mode and token afresh (from the environment or
    ~/.ray/auth_token): Ray caches both once per process (the mode in its config, the token in a
    loader singleton) and keeps them across ray.shutdown() and changes of the environment."""
    try:
        from ray._private.authentication_test_utils import reset_auth_token_state
    except ImportError:
        try:
            from ray._raylet import AuthenticationTokenLoader, Config
        except ImportError:  # a Ray without token authentication: nothing is cached
            return

        def reset_auth_token_state():
            Config.initialize("")  # the config first, as Ray's own helper does
            AuthenticationTokenLoader.instance().reset_cache()

    reset_auth_token_state()


@pytest.fixture
def fresh_ray():
    """A test that runs a Ray driver in this (pytest) process gets Ray as if the process were new,
    and leaves it so: no session connected, the Ray authentication variables as they were (a local
    ``ray.init`` sets RAY_AUTH_MODE=token in os.environ), and Ray's cached authentication mode and
    token dropped (an earlier cluster's token would otherwise be sent to the next Ray started here).
    Returns the function that makes Ray re-read them, for a test that sets its own variables."""
    import ray

    saved = {k: os.environ.get(k) for k in RAY_AUTH_VARS}
    if ray.is_initialized():
        ray.shutdown()
    _reread_ray_auth()
    yield _reread_ray_auth
    if ray.is_initialized():
        ray.shutdown()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    _reread_ray_auth()


from .leaks.summary import pytest_runtest_logreport, pytest_terminal_summary  # noqa: E402, F401  (the kill ratio, printed wherever the leak suite ran)
from .s3_server import s3_env, s3_server  # noqa: E402, F401  (a local S3 server for the object-store lake tests)

# Under pytest-xdist (`make test` runs three workers), tests that share a built lake run on one
# worker, so the lake is built once: every test using the session fixture `small_lake`, and the
# planted-leak suite (its kill-ratio test reads the results of the leak tests in its own process).
# The Ray tests too: each starts its own local Ray and checks that no raylet is left afterwards,
# which only holds when no other Ray test runs beside it.
RAY_TESTS = ("tests/pipeline/test_ray_engine.py", "tests/unit/test_engine.py")
XDIST_GROUPS = (
    ("small_lake", lambda item: "small_lake" in getattr(item, "fixturenames", ())),
    ("leaks", lambda item: "tests/leaks/" in item.nodeid),
    ("ray", lambda item: item.nodeid.startswith(RAY_TESTS)),
)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        for group, belongs in XDIST_GROUPS:
            if belongs(item):
                item.add_marker(pytest.mark.xdist_group(group))
                break
