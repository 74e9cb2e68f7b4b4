"""The NYSE calendar's file cache (core/calendar.py): the arrays exchange_calendars gives, read back
without it, and fabricated again whenever the file cannot be trusted."""

from __future__ import annotations

import numpy as np
import pytest

from finrag_dagster.core import calendar as C


@pytest.fixture(scope="module")
def fabricated():
    return C._fabricate()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return C.calendar_cache_file()


def _same(a, b) -> bool:
    return all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_the_cache_holds_exchange_calendars_arrays_and_is_read_without_it(cache, fabricated, monkeypatch):
    assert not cache.exists()
    assert _same(C._cached_arrays(), fabricated)
    assert cache.exists() and not [p for p in cache.parent.iterdir() if p.name.startswith(".")]  # no temporary file left

    def no_fabricate():
        raise AssertionError("fabricated although the cache file is there")

    monkeypatch.setattr(C, "_fabricate", no_fabricate)
    assert _same(C._cached_arrays(), fabricated)


@pytest.mark.parametrize("kind", ["garbage", "truncated", "wrong-dtype", "ragged", "missing-array"])
def test_a_file_that_cannot_be_trusted_is_fabricated_again(cache, fabricated, kind):
    cache.parent.mkdir(parents=True)
    s, c, o = fabricated
    if kind == "garbage":
        cache.write_bytes(b"not a numpy file")
    elif kind == "truncated":
        C._cached_arrays()
        cache.write_bytes(cache.read_bytes()[:200])
    elif kind == "wrong-dtype":
        np.savez(cache, sessions=s.astype("datetime64[s]"), closes_ns=c, opens_ns=o)
    elif kind == "ragged":
        np.savez(cache, sessions=s[:-1], closes_ns=c, opens_ns=o)
    else:
        np.savez(cache, sessions=s, closes_ns=c)
    assert _same(C._cached_arrays(), fabricated)
    with np.load(cache) as z:  # and the file is replaced by the right one
        assert _same((z["sessions"], z["closes_ns"], z["opens_ns"]), fabricated)


def test_the_file_is_keyed_by_the_holiday_rules_release(cache, monkeypatch):
    monkeypatch.setattr(C.pd, "__version__", "0.0.0-other")
    assert C.calendar_cache_file() != cache and C.calendar_cache_file().parent == cache.parent


def test_an_unwritable_cache_is_only_slower(tmp_path, monkeypatch, fabricated):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # its "finrag" folder cannot be created
    assert _same(C._cached_arrays(), fabricated)
