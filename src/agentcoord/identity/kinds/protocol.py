"""The seam every agent CLI's sessions go through (docs/architecture.md "Session kinds").

A session kind says how the daemon tells that one of the CLI's processes is an interactive
session, where the session's id and working directory come from, which environment variables
the CLI sets for every process it starts (the markers that keep its commands from passing for
the human), and what the session's agent name reads as. The rules of ancestry
(:func:`agentcoord.identity.ancestry.decide`) and of the human's proof
(:data:`agentcoord.identity.humanproof.AGENT_MARKERS`) take the kinds as values, so a new CLI is
one module in this package plus its entry in :data:`agentcoord.identity.kinds.KINDS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from agentcoord.identity.procinfo import ProcInfo

if TYPE_CHECKING:
    from agentcoord.kernel.config import Config

__all__ = ["SessionKind"]


class SessionKind(Protocol):
    """One agent CLI whose interactive sessions are agents."""

    @property
    def name(self) -> str:
        """Its short name, as a caller's ``session_kind`` says it: ``claude``."""
        ...

    @property
    def markers(self) -> tuple[str, ...]:
        """The environment variables the CLI sets for every process it starts."""
        ...

    @property
    def has_native_inbox(self) -> bool:
        """Whether the CLI's sessions are in Claude Code's own team inbox already (they are
        Claude Code): the daemon publishes a record there for each session of every other kind,
        so a Claude Code session can message it (docs/claude-code.md "Who sessions can
        message")."""
        ...

    def recognise(self, proc: ProcInfo) -> bool:
        """Whether ``proc`` is one of the CLI's sessions (the process its tools run under).
        Pure: it judges the values read, never the live process."""
        ...

    def refusal(self, session: ProcInfo) -> str | None:
        """Why the recognised process ``session`` cannot stand for one session (it serves
        several, so its callers could be taken for one another), or None when it can. A caller
        under such a process is refused with this text rather than guessed at."""
        ...

    def session_id(self, peer: ProcInfo | None, session: ProcInfo) -> str | None:
        """The CLI's id of the session ``session`` (the process :meth:`recognise` matched),
        as far as ``peer`` (the calling process, with its environment) or the CLI's own files
        tell; None when neither does."""
        ...

    def cwd(self, session: ProcInfo) -> str | None:
        """Where the session works."""
        ...

    def name_base(self, session: ProcInfo) -> str | None:
        """Its name rule: what the session's agent name reads as, before
        :func:`agentcoord.kernel.sessionnames.session_name` makes it safe and unique."""
        ...

    def native_name(self, session: ProcInfo) -> str | None:
        """The CLI's own name for the session (as its own list of sessions shows it), which a
        new session agent takes when valid and free; None when the CLI has not named it."""
        ...

    def configured(self, cfg: Config) -> SessionKind:
        """The kind with the daemon's settings (where the CLI keeps its files)."""
        ...
