"""Per-agent NATS access as messaging sees it (docs/messaging.md
"Direct NATS access (per-agent users)").

Only the embedded NATS server has per-agent users (the daemon renders its config); with an
external NATS there are none, and :class:`NoAgentUsers` says so. Both are an
:class:`AgentAccess`, so the service never asks which kind it holds.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentcoord.errors import Unavailable

__all__ = ["AgentAccess", "AgentLogin", "NoAgentUsers", "credentials_view"]


class AgentLogin(Protocol):
    """One agent's NATS login and the subjects it may touch."""

    @property
    def user(self) -> str: ...

    @property
    def password(self) -> str: ...

    @property
    def inbox_prefix(self) -> str: ...

    @property
    def subscribe(self) -> list[str]: ...

    @property
    def publish(self) -> list[str]: ...


class AgentAccess(Protocol):
    """What messaging needs from NATS auth: an agent's login, and channel grants."""

    async def credentials(self, agent: str) -> AgentLogin: ...

    async def allow(self, agent: str, subjects: list[str]) -> None: ...


NO_AGENT_USERS = "per-agent NATS users need the embedded NATS server"


class NoAgentUsers:
    """An external NATS (``--nats-url``): no per-agent users, so nothing to grant."""

    async def credentials(self, agent: str) -> AgentLogin:
        raise Unavailable(NO_AGENT_USERS)

    async def allow(self, agent: str, subjects: list[str]) -> None:
        return None


def credentials_view(login: AgentLogin, url: str) -> dict[str, Any]:
    """The ``nats_credentials`` result: where to connect, as whom, and what it may touch."""
    return {
        "url": url,
        "user": login.user,
        "password": login.password,
        "inbox_prefix": login.inbox_prefix,
        "subscribe": login.subscribe,
        "publish": login.publish,
    }
