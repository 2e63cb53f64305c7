"""The embedded nats-server: configured, started, watched and restarted by the daemon.

Readiness comes from the child's own log line ("Server is ready"), never a sleep; its output is
drained into our log; it dies with the daemon (PR_SET_PDEATHSIG, set before exec by
``setpriv --pdeathsig KILL``: :func:`~agentcoord.kernel.childexec.exec_prefix`, never by Python
code between fork and exec in this threaded process) so a SIGKILLed daemon leaves no orphan
holding the JetStream store; if it dies on its own it is restarted on the same port with
backoff, so clients reconnect to the same URL (docs/architecture.md "Child processes"). Its drain,
watch and heal tasks live in the supervisor's task set (docs/architecture.md "Tasks").

A store nats-server could not write (a full disk) stays refused by nats-server until it
restarts, even once space is back: the supervisor reads that from the server's own log line
and restarts it when the state disk has room again (docs/reliability.md "A full disk").
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import os
import re
import secrets
import signal
from collections.abc import Mapping
from pathlib import Path

from agentcoord.errors import NatsStartError
from agentcoord.kernel.busy import slack_now
from agentcoord.kernel.childexec import exec_prefix
from agentcoord.kernel.natsbin import find_nats_server
from agentcoord.kernel.tasks import TaskSet

__all__ = ["ROOM_BYTES", "NatsSupervisor", "has_room"]

log = logging.getLogger(__name__)

_READY = re.compile(rb"Server is ready")
_LISTEN = re.compile(rb"Listening for client connections on ([\d.]+):(\d+)")
_START_TIMEOUT = 10.0
# nats-server's words when a write to its file store failed for good: a stream's "critical
# write error" (its store refuses every later write) or JetStream disabled when out of space.
_STORE_FAILED = re.compile(rb"(?i)critical write error|will be DISABLED")
ROOM_BYTES = 1 << 20  # free space on the state disk below which writes are taken to fail
_HEAL_PACE = 1.0  # seconds at least between two restarts that heal the store


def has_room(path: Path) -> bool:
    """Whether the filesystem holding ``path`` has :data:`ROOM_BYTES` free (True when it
    cannot tell: a missing dir is not a full disk)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return True
    return st.f_bavail * st.f_frsize >= ROOM_BYTES


# Go's soft memory limit for the embedded server, unless the environment sets one: near it the
# Go collector runs more often, so the server holding 10k claims and 100k queued messages stays
# near 47 MB instead of 65 MB (the benchmark report's goal: <= 60 MB, docs/reliability.md).
# A soft limit never fails an allocation.
GO_MEMORY_LIMIT = "40MiB"


def _child_env(parent: Mapping[str, str]) -> dict[str, str]:
    env = dict(parent)
    env.setdefault("GOMEMLIMIT", GO_MEMORY_LIMIT)
    return env


class NatsSupervisor:
    """Async context manager owning one nats-server child and its watcher task.

    Its tasks (the watcher, each child's output drain) belong to one :class:`TaskSet`,
    entered for the supervisor's lifetime in ``__aenter__`` and left last in ``__aexit__``.
    """

    def __init__(self, state_dir: Path, binary: Path | None = None, sync: str = "2m") -> None:
        self._dir = state_dir / "nats"
        self._binary = binary
        if not re.fullmatch(r"always|\d+(ms|s|m|h)", sync):
            raise NatsStartError(f"nats sync interval must be 'always' or a duration, not {sync!r}")
        self._sync = sync
        self.user = "agentcoord"
        # Generated per start; lives only in memory and the 0600 config file.
        self.password = secrets.token_urlsafe(24)
        self.port = -1
        self.restarts = 0
        self._proc: asyncio.subprocess.Process | None = None
        self._tail: collections.deque[str] = collections.deque(maxlen=40)
        self._ready = asyncio.Event()
        self._tasks = TaskSet("nats supervisor")
        self._watch: asyncio.Task[None] | None = None
        self._heal: asyncio.Task[None] | None = None
        self._drain: asyncio.Task[None] | None = None
        self._stopping = False
        self.up = asyncio.Event()
        # nats-server's last line saying it cannot write its store, until it is restarted.
        self.store_error = ""
        self._store_failed = asyncio.Event()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    def _write_config(self) -> Path:
        self._dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        conf = self._dir / "nats.conf"
        text = "\n".join(
            [
                "host: 127.0.0.1",
                f"port: {self.port}",
                # sync_interval (Config.nats_sync): how often the file store fsyncs. Writes
                # reach the OS before each ack either way; "always" fsyncs before the ack too.
                "jetstream {",
                f"  store_dir: {json.dumps(str(self._dir / 'js'))}",
                # Quoted: nats-server reads a bare 2m as a number and warns "sync_interval
                # should be converted to a duration" (`nats-server -t` refuses it).
                f"  sync_interval: {json.dumps(self._sync)}",
                "}",
                "authorization {",
                "  users = [",
                f"    {{ user: {json.dumps(self.user)}, password: {json.dumps(self.password)} }}",
                "  ]",
                "}",
                "max_payload: 8MB",
                "",
            ]
        )
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        return conf

    async def _start_once(self) -> None:
        binary = find_nats_server(self._binary)
        conf = self._write_config()
        self._ready.clear()
        self._tail.clear()
        # Forked from the loop's thread (asyncio does), which the death signal follows.
        self._proc = proc = await asyncio.create_subprocess_exec(
            *exec_prefix(),
            str(binary),
            "-c",
            str(conf),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=_child_env(os.environ),
            # Its own process group: a Ctrl-C or a group-wide SIGTERM reaches the daemon, which
            # then stops NATS in order, instead of NATS dying under a daemon still serving.
            start_new_session=True,
        )
        self._drain = self._tasks.spawn(self._drain_output(proc), name="nats-drain")
        try:
            async with asyncio.timeout(_START_TIMEOUT * slack_now()):
                async with asyncio.TaskGroup() as tg:  # whichever comes first: ready or exit
                    ready = tg.create_task(self._ready.wait(), name="nats-ready")
                    died = tg.create_task(proc.wait(), name="nats-died")
                    await asyncio.wait({ready, died}, return_when=asyncio.FIRST_COMPLETED)
                    for task in (ready, died):
                        task.cancel()
                if not self._ready.is_set():
                    await self._drain
                    raise NatsStartError(
                        f"nats-server exited with code {proc.returncode} during start",
                        list(self._tail),
                    )
        except TimeoutError:
            await self._kill()
            raise NatsStartError(
                "nats-server did not become ready in time", list(self._tail)
            ) from None
        log.info("nats-server ready on %s (pid %d)", self.url, proc.pid)
        self.store_error = ""  # a new process: its stores are opened afresh
        self._store_failed.clear()
        self.up.set()

    async def _drain_output(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        current = self._proc  # spawned just after it started: an old one's lines say nothing
        async for line in proc.stdout:
            text = line.decode("utf-8", "replace").rstrip()
            self._tail.append(text)
            log.debug("nats-server: %s", text)
            match = _LISTEN.search(line)
            if match:
                self.port = int(match.group(2))
            if _READY.search(line):
                self._ready.set()
            if _STORE_FAILED.search(line) and current is self._proc:
                if not self.store_error:
                    log.error("nats-server cannot write its store: %s", text)
                self.store_error = text
                self._store_failed.set()

    def prepare_stop(self) -> None:
        """The daemon is stopping: a nats-server exit from now on is not restarted."""
        self._stopping = True

    async def _watch_loop(self) -> None:
        backoff = 0.05
        while not self._stopping:
            assert self._proc is not None
            code = await self._proc.wait()
            if self._stopping:
                return
            self.up.clear()
            log.warning("nats-server exited with code %s; restarting on port %d", code, self.port)
            while not self._stopping:
                try:
                    await self._start_once()
                    self.restarts += 1
                    backoff = 0.05
                    break
                except (NatsStartError, OSError) as exc:
                    # OSError: the config cannot be written (disk full: docs/reliability.md
                    # "tests/reliability"). Giving up here would leave the daemon up with NATS
                    # gone for good; keep retrying.
                    log.error("nats-server restart failed: %s", exc)
                    await asyncio.sleep(backoff)  # backoff between failed restarts, not polling
                    backoff = min(backoff * 2, 5.0)

    async def _heal_loop(self) -> None:
        """Restart nats-server once its store failed a write and the state disk has room
        again; the watch loop starts it again on the same port."""
        while not self._stopping:
            await self._store_failed.wait()
            delay = 0.1
            while self.store_error and not has_room(self._dir):
                # No event says that space came back: look again, less often as it lasts.
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
            if not self.store_error:
                continue  # restarted meanwhile (it crashed, or was killed): nothing to heal
            log.warning("the state disk has room again: restarting nats-server to reopen its store")
            self.store_error = ""
            self._store_failed.clear()
            await self._kill()
            await asyncio.sleep(_HEAL_PACE)  # a disk that fills again is not restarted in a loop

    async def __aenter__(self) -> NatsSupervisor:
        await self._tasks.__aenter__()
        try:
            await self._start_once()
        except BaseException:
            await self._tasks.__aexit__(None, None, None)
            raise
        self._watch = self._tasks.spawn(self._watch_loop(), name="nats-watch")
        self._heal = self._tasks.spawn(self._heal_loop(), name="nats-heal")
        return self

    async def _kill(self) -> None:
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(3):
                await proc.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    async def __aexit__(self, *exc: object) -> None:
        self._stopping = True
        for task in (self._watch, self._heal):
            if task is not None:
                task.cancel("daemon stopping")
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self._kill()
        if self._drain is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._drain, 1)
        await self._tasks.__aexit__(None, None, None)
        self.up.clear()
