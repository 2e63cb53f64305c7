"""What most session kinds answer alike: the CLI's process is the session (one process, one
agent, unless the kind refuses it), its cwd is the process's, the name is that cwd's basename,
and the CLI gives its sessions no name another process can read (docs/architecture.md
"Session kinds"). A kind overrides only what differs."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

from agentcoord.identity.kinds.cwdname import basename_of
from agentcoord.identity.procinfo import ProcInfo

if TYPE_CHECKING:
    from agentcoord.kernel.config import Config

__all__ = ["ProcessSessionKind"]


class ProcessSessionKind:
    """The defaults of :class:`~agentcoord.identity.kinds.protocol.SessionKind` for a CLI whose
    process is its session."""

    has_native_inbox: ClassVar[bool] = False  # Claude Code's team inbox lists it by a record

    def refusal(self, session: ProcInfo) -> str | None:
        return None  # one process serves one session

    def session_id(self, peer: ProcInfo | None, session: ProcInfo) -> str | None:
        return None  # the process is the session

    def cwd(self, session: ProcInfo) -> str | None:
        return session.cwd

    def name_base(self, session: ProcInfo) -> str | None:
        return basename_of(self.cwd(session))

    def native_name(self, session: ProcInfo) -> str | None:
        return None  # the CLI does not name its sessions where another process can read it

    def configured(self, cfg: Config) -> Self:
        return self  # nothing of the daemon's settings changes it
