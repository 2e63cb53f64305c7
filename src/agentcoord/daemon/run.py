"""Running the daemon: ``serve()`` takes the dir locks, composes the services on one
AsyncExitStack (:mod:`.compose`), says READY, and waits in a TaskGroup for the stop.

Stop runs the stack backwards (the listeners stop accepting first), under a deadline, logging
rather than raising cleanup failures (docs/architecture.md "Stopping").
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import signal
import socket
import stat
from typing import Any

from agentcoord.daemon.compose import Daemon, compose
from agentcoord.daemon.locks import DirLock
from agentcoord.daemon.notify import sd_notify
from agentcoord.daemon.rundir import keep_runtime_dir
from agentcoord.daemon.startup import Phases, write_failure
from agentcoord.daemon.statefmt import ensure_format
from agentcoord.errors import (
    AgentCoordError,
    ConfigError,
    DaemonAlreadyRunning,
    StateFormatError,
)
from agentcoord.kernel.config import Config
from agentcoord.kernel.lazy import load_deferred

__all__ = ["prepare_dirs", "serve"]

log = logging.getLogger(__name__)

_GC_GEN0 = 10_000  # allocations between young collections (default 700); see _tune_gc

_STOP_DEADLINE = 4.5  # a SIGTERM stop ends within 5 s, inside the unit's TimeoutStopSec=10
_START_CANCEL_S = 0.8  # a stop during start-up: the start's end, then the close, each at most


def prepare_dirs(cfg: Config) -> None:
    """Create the state and runtime dirs 0700 and refuse ones another user owns."""
    for path in (cfg.state_dir, cfg.runtime_dir):
        try:
            path.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as exc:  # one line naming the path, not a traceback
            raise ConfigError(f"cannot create {path}: {exc.strerror or exc}") from None
        info = path.stat()
        if info.st_uid != os.getuid():
            raise ConfigError(f"{path} belongs to uid {info.st_uid}, not to us")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(path, 0o700)


def _leave_pointer(cfg: Config) -> None:
    """Name our dirs in the user's pointer (docs/daemon.md "Finding the daemon"), unless it
    names another daemon that is serving: the first one started keeps it, and a daemon on
    dirs of its own (a test, a second state) does not take the user's clients away from it.
    A stopped daemon's pointer stays: it says where the user's daemon belongs."""
    if cfg.pointer_file is None:
        return
    from agentcoord.kernel.locate import read_pointer_file, write_pointer

    uid = os.getuid()
    pointed = read_pointer_file(cfg.pointer_file, uid)
    if pointed is not None and pointed != (cfg.runtime_dir, cfg.state_dir):
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(pointed[0] / "agentcoord.sock"))
        except OSError:
            pass  # a stopped daemon's: ours now
        else:
            log.info(
                "the pointer %s names the daemon on %s: left as it is", cfg.pointer_file, pointed[0]
            )
            return
        finally:
            probe.close()
    try:
        write_pointer(cfg.pointer_file, uid, cfg.runtime_dir, cfg.state_dir)
    except OSError as exc:
        log.warning("cannot write the pointer %s: %s", cfg.pointer_file, exc)


def _install_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    interrupts = 0

    def on_term() -> None:
        stop.set()

    def on_int() -> None:
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1:
            os._exit(130)  # a second Ctrl-C forces exit (docs/architecture.md "Stopping")
        stop.set()

    loop.add_signal_handler(signal.SIGTERM, on_term)
    loop.add_signal_handler(signal.SIGINT, on_int)


async def serve(cfg: Config, *, stop: asyncio.Event | None = None) -> None:
    """Run the daemon until ``stop`` is set (SIGTERM/SIGINT set it, during start-up too)."""
    stop = stop or asyncio.Event()
    prepare_dirs(cfg)
    with DirLock(cfg.state_dir), DirLock(cfg.runtime_dir) as runtime_lock:
        _install_signals(stop)
        async with contextlib.AsyncExitStack() as stack:
            daemon = await _start_or_stop(cfg, stack, stop)
            if daemon is None:
                return
            _tune_gc()
            _leave_pointer(cfg)
            sd_notify(cfg.notify_socket, "READY=1")
            log.info(
                "agentcoord ready: socket %s, http %s, nats %s",
                cfg.socket_path,
                daemon.status.status()["http_addr"],
                daemon.services.nats.url,
            )
            async with asyncio.TaskGroup() as tg:
                background = []
                if cfg.watchdog_interval and cfg.notify_socket:
                    background.append(tg.create_task(_watchdog(cfg), name="watchdog"))
                if daemon.unix is not None:
                    keeper = keep_runtime_dir(
                        cfg, daemon.unix, runtime_lock, daemon.status.status()["http_addr"]
                    )
                    background.append(tg.create_task(keeper, name="runtime-dir"))
                # What start-up left to first use (protobuf, psutil: ~18 ms), loaded now in a
                # thread, so neither ready nor the first request waits for it.
                tg.create_task(asyncio.to_thread(load_deferred), name="load-deferred")
                await stop.wait()
                if daemon.services.nats.supervisor is not None:
                    daemon.services.nats.supervisor.prepare_stop()
                for task in background:
                    task.cancel("daemon stopping")
            sd_notify(cfg.notify_socket, "STOPPING=1")
            log.info("stopping")
            await _close_with_deadline(stack)
            log.info("stopped")  # after every part has closed (the stack ran backwards)


async def _start_or_stop(
    cfg: Config, stack: contextlib.AsyncExitStack, stop: asyncio.Event
) -> Daemon | None:
    """Start every part, within each phase's bound; None when a stop came first.

    A stop during start-up (SIGTERM from systemd, Ctrl-C) is honoured at once: a watcher in
    the start's task group cancels the start, and what it opened is closed within ~2 s. A
    failed start leaves one line for the CLI (the phase and what to do), the traceback in
    ``<state>/startup-error.log``, and the reason in systemd's ``STATUS=``.
    """
    phases = Phases()
    me = asyncio.current_task()
    assert me is not None
    stopped = asyncio.Event()  # set by the watcher when it cancelled the start
    daemon: Daemon | None = None
    failed: Exception | None = None
    try:
        async with asyncio.TaskGroup() as tg:
            watcher = tg.create_task(
                _stop_start(stop, me, stopped, stack, phases), name="stop-during-start"
            )
            try:
                daemon = await _bounded_start(cfg, stack, phases)
            except asyncio.CancelledError:
                if not stopped.is_set():
                    raise  # serve() itself was cancelled
                me.uncancel()
            except Exception as exc:  # reported below, outside the task group (no wrapping)
                failed = exc
            finally:
                watcher.cancel("the start ended")
    except asyncio.CancelledError:
        # The stop's cancel arrived just as the start ended: delivered at the group's exit.
        if not stopped.is_set():
            raise
        me.uncancel()
    if stopped.is_set():  # a stop came first: whatever the start did, close it
        log.info("stop requested during start-up (%s): stopping", phases.current)
        await _close_cancelled_start(stack)
        return None
    if failed is not None:
        raise _reported(cfg, failed)
    return daemon


async def _stop_start(
    stop: asyncio.Event,
    start: asyncio.Task[Any],
    stopped: asyncio.Event,
    stack: contextlib.AsyncExitStack,
    phases: Phases,
) -> None:
    """Cancel the start when a stop comes first; cancelled itself as soon as the start ends.

    A part may swallow its cancel (nats-py's first connect does), so a start that has not
    ended :data:`_START_CANCEL_S` after it was cancelled is abandoned: what it opened is
    closed, within its own bound, and the process exits 0, as a stop does (start-up never
    hangs: docs/architecture.md "Stopping")."""
    await stop.wait()
    stopped.set()
    start.cancel("stop requested during start-up")
    await asyncio.sleep(_START_CANCEL_S)  # a deadline, not a synchronisation
    log.info("stop requested during start-up (%s): stopping", phases.current)
    log.error("the start did not end within %.1fs of its cancel", _START_CANCEL_S)
    await _close_cancelled_start(stack)
    log.info("stopped")
    logging.shutdown()
    os._exit(0)


def _reported(cfg: Config, exc: Exception) -> Exception:
    """The start's failure as the CLI and systemd show it: one line, details in the log."""
    where = write_failure(cfg.state_dir, exc)
    log.debug("start-up failed", exc_info=exc)
    # One line everywhere (the CLI, STATUS=): a part's own detail (nats-server's last
    # lines) stays in the log file with the traceback.
    text = str(exc).strip()
    line = text.splitlines()[0] if text else repr(exc)
    said = [t.strip() for t in getattr(exc, "last_lines", ()) if t.strip()]
    if said:  # the child's last word is usually the reason (NatsStartError)
        line += f"; it said: {said[-1][:300]}"
    sd_notify(cfg.notify_socket, f"STATUS=start-up failed: {line}")
    # A bad setting already says all there is; a failed part points to its traceback.
    if isinstance(exc, AgentCoordError) and not _is_setting(exc):
        exc.args = (f"{line} (details: {where})" if where else line,)
    return exc


async def _close_cancelled_start(stack: contextlib.AsyncExitStack) -> None:
    """Close what a cancelled start had opened, within its own bound."""
    moved = stack.pop_all()
    try:
        async with asyncio.timeout(_START_CANCEL_S):
            await moved.aclose()
    except TimeoutError:
        log.error("closing a cancelled start took longer than %.1fs", _START_CANCEL_S)
    except Exception:
        log.exception("error while closing a cancelled start")


def _is_setting(exc: BaseException) -> bool:
    return isinstance(exc, ConfigError | StateFormatError | DaemonAlreadyRunning)


async def _bounded_start(cfg: Config, stack: contextlib.AsyncExitStack, phases: Phases) -> Daemon:
    phases.begin("the state dir", 2, f"check {cfg.state_dir} (permissions, disk space)")
    async with phases.bounded():
        ensure_format(cfg.state_dir)
        return await compose(cfg, stack, phases)


def _tune_gc() -> None:
    """Collect cycles less often, and never look at what start-up built again.

    Every request allocates many short-lived objects, so with the default gen0 threshold (700)
    a collection ran every few requests, and each full one walked every module, class and
    cached object loaded at start. Freezing moves those to the permanent generation; a higher
    gen0 threshold makes the young collections rarer. Under 16 claim clients this took the
    daemon's p99 from about 17 ms to 9-13 ms (bench/claims.py).
    """
    gc.freeze()
    gc.set_threshold(_GC_GEN0, 10, 10)


async def _watchdog(cfg: Config) -> None:
    """Ping systemd's watchdog while the event loop runs (WatchdogSec in the unit)."""
    assert cfg.watchdog_interval is not None
    while True:
        sd_notify(cfg.notify_socket, "WATCHDOG=1")
        await asyncio.sleep(cfg.watchdog_interval)  # a timer, not polling for state


async def _close_with_deadline(stack: contextlib.AsyncExitStack) -> None:
    moved = stack.pop_all()
    try:
        async with asyncio.timeout(_STOP_DEADLINE):
            await moved.aclose()
    except TimeoutError:
        log.error("shutdown took longer than %.1fs; exiting anyway", _STOP_DEADLINE)
    except Exception:
        log.exception("error during shutdown")
