"""Start-up phases: each one named, timed and bounded, so a start never hangs.

A phase that does not finish in time, or fails, becomes one :class:`StartupError` naming the
part and what to do; the CLI prints that one line (the traceback goes to the log file named
in it, and to stderr with ``--debug``). The bounds are a few seconds: on an embedded NATS and
a local SQLite file every phase takes milliseconds, so a phase still running after seconds is
waiting for something that will not come (README "Start-up").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import traceback
from collections.abc import AsyncIterator
from pathlib import Path

from agentcoord.errors import AgentCoordError, StartupError
from agentcoord.kernel.busy import slack_now

__all__ = ["Phases", "write_failure"]

FAILURE_LOG = "startup-error.log"

log = logging.getLogger(__name__)


class Phases:
    """The phases of one start: their timings for the ready log line, and one deadline that
    each :meth:`begin` moves to ``now + seconds`` for the phase it opens."""

    def __init__(self) -> None:
        self._t0 = self._last = time.perf_counter()
        self.marks: list[str] = []
        self.current = "preparing the state dir"
        self._base = self._seconds = 5.0  # the phase's bound as asked, and as stretched
        self._hint = "see the log"
        self._timeout: asyncio.Timeout | None = None

    def begin(self, name: str, seconds: float, hint: str) -> None:
        """Open phase ``name``: it has ``seconds`` to finish, stretched on a busy machine
        (kernel/busy.py); ``hint`` says what to do if not."""
        stretch = slack_now()
        if stretch > 1.0:
            log.debug("start-up: %s may take %.1fx longer on this busy machine", name, stretch)
        self._base = seconds
        self.current, self._seconds, self._hint = name, seconds * stretch, hint
        if self._timeout is not None:
            self._timeout.reschedule(asyncio.get_running_loop().time() + self._seconds)

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.marks.append(f"{name} {1000 * (now - self._last):.0f}ms")
        self._last = now

    def summary(self) -> str:
        return f"{1000 * (self._last - self._t0):.0f}ms: " + ", ".join(self.marks)

    @contextlib.asynccontextmanager
    async def bounded(self) -> AsyncIterator[None]:
        """Run the start under the phases' deadline; any failure names the current phase."""
        try:
            async with asyncio.timeout(None) as self._timeout:
                self.begin(self.current, self._base, self._hint)  # stretched once, here
                yield
        except AgentCoordError:
            raise
        except TimeoutError:
            raise self._late() from None
        except BaseExceptionGroup as group:
            typed = group.subgroup(lambda e: isinstance(e, AgentCoordError))
            if typed is not None:
                raise _first(typed) from group
            if group.subgroup(lambda e: isinstance(e, TimeoutError)) is not None:
                raise self._late() from group
            if group.subgroup(lambda e: not isinstance(e, Exception)) is not None:
                raise  # cancellation, KeyboardInterrupt: not a failure of the part
            raise self._failed(_first(group)) from group
        except Exception as exc:
            raise self._failed(exc) from exc
        finally:
            self._timeout = None

    def _late(self) -> StartupError:
        return StartupError(
            f"start-up: {self.current} did not answer within {self._seconds:.3g} s; {self._hint}"
        )

    def _failed(self, exc: BaseException) -> StartupError:
        return StartupError(f"start-up: {self.current} failed ({_named(exc)}); {self._hint}")


def _named(exc: BaseException) -> str:
    """The failure as one line: nats-py's API errors keep their codes and description in
    ``str`` only (their ``repr`` is the bare class name)."""
    text = str(exc)
    if not text:
        return repr(exc)
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"


def _first(group: BaseExceptionGroup[BaseException]) -> BaseException:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def write_failure(state_dir: Path, exc: BaseException) -> Path | None:
    """Keep the whole traceback of a failed start in ``<state>/startup-error.log``."""
    path = state_dir / FAILURE_LOG
    text = "".join(traceback.format_exception(exc))
    try:
        path.write_text(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n{text}")
    except OSError:
        return None
    return path
