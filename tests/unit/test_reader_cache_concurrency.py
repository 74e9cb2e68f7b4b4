"""The reader cache is shared by the loop's families, which Dagster's multiprocess executor runs as
concurrent steps: a flush merges into what is stored, it never writes back a stale copy."""

import multiprocessing as mp

from finrag_dagster.core.reader.cache import PromptCache
from finrag_dagster.core.tables import Lake

DAY = "2019-01-02"


def _put(cache: PromptCache, key: str) -> None:
    cache.put(key, "embedded", "m", f"answer {key}", 10, 3, 1.5)


def test_a_flush_keeps_what_another_cache_stored_since_it_was_loaded(tmp_path):
    lake = Lake(tmp_path / "lake")
    a, b = PromptCache(lake, DAY), PromptCache(lake, DAY)  # both loaded before either writes
    _put(a, "k-a")
    _put(b, "k-b")
    assert a.flush() == 1 and b.flush() == 1
    stored = lake.read("reader_cache", dates=[DAY])
    assert sorted(stored["key"]) == ["k-a", "k-b"]
    # an answer already stored is not replaced by a later copy of the same prompt
    c = PromptCache(Lake(tmp_path / "lake"), DAY)
    c.put("k-a", "embedded", "m", "answer k-a", 10, 3, 99.0)
    c.flush()
    row = lake.read("reader_cache", dates=[DAY]).filter(key="k-a")
    assert row["latency_ms"].to_list() == [1.5]


def _writer(root: str, who: int, n: int, start) -> None:
    lake = Lake(root)
    start.wait()
    for i in range(n):
        cache = PromptCache(lake, DAY)
        _put(cache, f"p{who}-{i}")
        cache.flush()


def test_concurrent_processes_lose_no_entry(tmp_path):
    root = str(tmp_path / "lake")
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(3)
    procs = [ctx.Process(target=_writer, args=(root, w, 25, start)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    keys = Lake(root).read("reader_cache", dates=[DAY])["key"].to_list()
    assert sorted(keys) == sorted(f"p{w}-{i}" for w in range(3) for i in range(25))


def test_a_cache_reads_its_day_under_the_writers_lock(tmp_path):
    """Another process's flush replaces the day's file while this one may be reading it (a read
    that opens the file twice, footer then data, mixed two files: "Couldn't deserialize thrift" in
    a two-process demo). So a cache loads its day only while no writer holds the lock."""
    import threading

    from finrag_dagster.core.reader.cache import _cache_lock

    lake = Lake(tmp_path / "lake")
    first = PromptCache(lake, DAY)
    _put(first, "k")
    first.flush()
    loaded = threading.Event()

    def load() -> None:
        assert PromptCache(lake, DAY).get("k") is not None
        loaded.set()

    with _cache_lock(lake):  # a writer mid-flush
        t = threading.Thread(target=load)
        t.start()
        assert not loaded.wait(0.5), "the cache read its day while a writer held the lock"
    assert loaded.wait(30), "the cache never loaded once the writer was done"
    t.join(30)
