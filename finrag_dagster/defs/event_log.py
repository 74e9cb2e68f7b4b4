"""Dagster's consolidated SQLite event log with one database engine per process.

``ConsolidatedSqliteEventLogStorage`` builds a new SQLAlchemy engine for every connection it opens,
so every event it stores pays an engine's creation and compiles its INSERT statements afresh (the
compiled-statement cache lives on the engine). A range run records one materialisation per
partition and asset: on the demo that is tens of thousands of events, and those two costs were most
of Dagster's share of the run (docs/scale.md, "Where the demo's seconds go"). This subclass keeps
the same file, schema, WAL journal and busy timeout and changes only that: one engine per process
(a fork or a step process makes its own), its connections pooled, and ``synchronous = NORMAL``
(SQLite's recommended setting with WAL: a commit is durable once the WAL is checkpointed; a power
cut may lose the last commits but never corrupts the file). Configured in the shipped
``.dagster_home/dagster.yaml``; the webserver, the daemon and the runs all load it from there.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager

from dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log import ConsolidatedSqliteEventLogStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from sqlalchemy import create_engine, event


class PooledSqliteEventLogStorage(ConsolidatedSqliteEventLogStorage):
    """The consolidated SQLite event log (one ``event_log.db`` under ``base_dir``) with one pooled
    engine per process instead of one engine per connection."""

    _lock = threading.Lock()

    def _engine(self):
        pid = os.getpid()
        eng = getattr(self, "_finrag_engine", None)
        if eng is None or self._finrag_engine_pid != pid:
            with self._lock:
                eng = getattr(self, "_finrag_engine", None)
                if eng is None or self._finrag_engine_pid != pid:
                    eng = create_engine(self._conn_string, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False})
                    event.listen(eng, "connect", _pragmas)
                    self._finrag_engine, self._finrag_engine_pid = eng, pid
        return eng

    @contextmanager
    def _connect(self):
        with self._engine().connect() as conn:
            with conn.begin():
                yield conn

    def dispose(self):
        eng = getattr(self, "_finrag_engine", None)
        if eng is not None and self._finrag_engine_pid == os.getpid():
            eng.dispose()
        self._finrag_engine = None
        super().dispose()


def _pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
