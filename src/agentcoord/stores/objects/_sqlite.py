"""The SQLite file of the object store, driven from one dedicated thread.

Every call is one hop to that thread (docs/store.md "Storage": a hop costs ~100-200 us, so the
writer sends whole batches). Tables: ``objects`` (current state), ``events`` (the log; its rowid is
the resourceVersion), ``meta`` (compaction point, counter); ``PRAGMA user_version`` is the schema
version. WAL with ``synchronous=NORMAL``: a process crash loses nothing committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from agentcoord.stores.objects.statuserrors import StoreError

__all__ = ["SCHEMA_VERSION", "EventRow", "ObjectRow", "SqliteFile"]

# 2: the tables are those of 1; what changed is what the objects hold (records in spec and
# status, state format 2, daemon/statefmt.py). 0.1.0 predates format.json but refuses a schema
# newer than its 1, so this number is what stops it opening a dir whose records it would not
# see (docs/reliability.md "Downgrades").
SCHEMA_VERSION = 2
_WAL_LIMIT = 8 << 20  # bytes the -wal file keeps after a checkpoint
T = TypeVar("T")
EventRow = tuple[int, str, str, str, str, bytes]  # rv, type, resource, namespace, name, object
ObjectRow = tuple[str, str, str, int, bytes]  # resource, namespace, name, rv, object

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS objects (
    resource TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    rv INTEGER NOT NULL, object BLOB NOT NULL,
    PRIMARY KEY (resource, namespace, name)
) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS events (
    rv INTEGER PRIMARY KEY, type TEXT NOT NULL, resource TEXT NOT NULL,
    namespace TEXT NOT NULL, name TEXT NOT NULL, object BLOB NOT NULL
)""",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
]


class SqliteFile:
    """The store's database; ``open``/``close`` bracket the thread's life."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None

    async def open(self) -> tuple[list[tuple[str, bytes]], int, int]:
        """Open (creating or migrating); returns (stored objects, top rv, compacted rv)."""
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="objects-sqlite")
        return await self._run(self._open)

    async def close(self) -> None:
        if self._executor is None:
            return
        with contextlib.suppress(Exception):
            await self._run(self._close)
        self._executor.shutdown(wait=True)
        self._executor = None

    async def commit(
        self,
        events: list[EventRow],
        upserts: list[ObjectRow],
        deletes: list[tuple[str, str, str]],
        compact_to: int | None,
        top_rv: int,
    ) -> None:
        """One transaction: append events, upsert/delete objects, maybe compact the log."""
        await self._run(self._commit, events, upserts, deletes, compact_to, top_rv)

    async def events(self, resource: str, after: int, upto: int) -> list[tuple[int, str, bytes]]:
        """The log of ``resource`` in (after, upto], oldest first."""
        return await self._run(self._events, resource, after, upto)

    async def versions_at(
        self, resource: str, keys: set[tuple[str, str]], at: int
    ) -> dict[tuple[str, str], dict[str, Any] | None]:
        """Each object's version at ``at`` (None: absent then) where the log still knows it."""
        return await self._run(self._versions_at, resource, keys, at)

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        assert self._executor is not None
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    # -- SQLite (runs on the store's own thread) --------------------------------------------

    def _open(self) -> tuple[list[tuple[str, bytes]], int, int]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._conn = conn
        with contextlib.suppress(OSError):
            self.path.chmod(0o600)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=5000")
        # The WAL is checkpointed every 1000 pages (SQLite's wal_autocheckpoint) and then
        # reused from its start, but the file keeps its largest size unless capped: after a
        # big batch it is truncated back to this (sqlite.org/pragma.html, journal_size_limit).
        conn.execute(f"PRAGMA journal_size_limit={_WAL_LIMIT}")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}; this agentcoord knows {SCHEMA_VERSION}"
            )
        if version < SCHEMA_VERSION:
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        rows = conn.execute("SELECT resource, object FROM objects").fetchall()
        compacted = (
            conn.execute("SELECT value FROM meta WHERE key='compacted'").fetchone() or [0]
        )[0]
        top_event = conn.execute("SELECT max(rv) FROM events").fetchone()[0] or 0
        top_object = conn.execute("SELECT max(rv) FROM objects").fetchone()[0] or 0
        top_meta = (conn.execute("SELECT value FROM meta WHERE key='rv'").fetchone() or [0])[0]
        return rows, max(top_event, top_object, top_meta, compacted), compacted

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _commit(
        self,
        events: list[EventRow],
        upserts: list[ObjectRow],
        deletes: list[tuple[str, str, str]],
        compact_to: int | None,
        top_rv: int,
    ) -> None:
        conn = self._conn
        assert conn is not None
        conn.execute("BEGIN IMMEDIATE")
        try:
            if events:
                conn.executemany(
                    "INSERT INTO events(rv, type, resource, namespace, name, object) "
                    "VALUES (?,?,?,?,?,?)",
                    events,
                )
            if upserts:
                conn.executemany(
                    "INSERT INTO objects(resource, namespace, name, rv, object) VALUES (?,?,?,?,?)"
                    " ON CONFLICT(resource, namespace, name) DO UPDATE SET rv=excluded.rv, "
                    "object=excluded.object",
                    upserts,
                )
            if deletes:
                conn.executemany(
                    "DELETE FROM objects WHERE resource=? AND namespace=? AND name=?", deletes
                )
            if compact_to is not None:
                conn.execute("DELETE FROM events WHERE rv <= ?", (compact_to,))
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('compacted', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    (compact_to,),
                )
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('rv', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    (top_rv,),
                )
            conn.execute("COMMIT")
        except BaseException:
            # SQLite ends the transaction itself on some errors (SQLITE_FULL: disk full); a
            # ROLLBACK then fails and its error would hide the real one (found by the fault
            # suite's full disk: docs/reliability.md "tests/reliability").
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _events(self, resource: str, after: int, upto: int) -> list[tuple[int, str, bytes]]:
        conn = self._conn
        assert conn is not None
        rows: list[tuple[int, str, bytes]] = conn.execute(
            "SELECT rv, type, object FROM events WHERE rv > ? AND rv <= ? AND resource = ? "
            "ORDER BY rv",
            (after, upto, resource),
        ).fetchall()
        return rows

    def _versions_at(
        self, resource: str, keys: set[tuple[str, str]], at: int
    ) -> dict[tuple[str, str], dict[str, Any] | None]:
        conn = self._conn
        assert conn is not None
        compacted = conn.execute("SELECT value FROM meta WHERE key = 'compacted'").fetchone()
        floor = compacted[0] if compacted else 0
        out: dict[tuple[str, str], dict[str, Any] | None] = {}
        for ns, name in keys:
            row = conn.execute(
                "SELECT type, object FROM events WHERE resource = ? AND namespace = ? "
                "AND name = ? AND rv <= ? ORDER BY rv DESC LIMIT 1",
                (resource, ns, name, at),
            ).fetchone()
            if row is not None:
                out[(ns, name)] = None if row[0] == "DELETED" else json.loads(row[1])
            elif floor == 0:
                out[(ns, name)] = None  # the whole log is there: it did not exist at ``at``
        return out

    # -- cache and indexes ----------------------------------------------------------------
