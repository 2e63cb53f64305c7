"""The one exception tree of agentcoord.

::

    AgentCoordError
    ├── ConfigError                 bad flag, environment variable or config file
    ├── DaemonAlreadyRunning        another daemon holds the state/runtime dir lock
    ├── DaemonUnreachable           no daemon answers on the socket (CLI, shim)
    │   └── DaemonTimeout           one is there but did not answer in time
    ├── NatsStartError              nats-server did not become ready (carries its last lines)
    ├── ProtocolError               a JSON-RPC level failure (code + message), see ``jsonrpc``
    ├── StartupError                a start-up phase failed or did not answer in time
    ├── StateFormatError            the state dir is of a format this version cannot open
    └── ToolError                   a tool call failed; rendered as an ``isError`` result
        ├── InvalidArguments        wrong type, missing required argument, bad value
        ├── IdentityError           caller cannot be identified, or is refused
        │   ├── IdentityMismatch    an ``agent``/``from`` argument disagrees with the transport
        │   └── PeerGone            the caller left before it could be identified
        └── NotFound                the named object does not exist

Third-party exceptions are translated at the boundary that meets them; the mapping of these to
JSON-RPC codes lives in :func:`agentcoord.mcp.jsonrpc.error_response`, to HTTP status codes in
:func:`agentcoord.kernel.httpserver.status_for`.
"""

from __future__ import annotations

__all__ = [
    "AgentCoordError",
    "ConfigError",
    "DaemonAlreadyRunning",
    "DaemonTimeout",
    "DaemonUnreachable",
    "IdentityError",
    "IdentityMismatch",
    "InvalidArguments",
    "NatsStartError",
    "NotFound",
    "PeerGone",
    "ProtocolError",
    "StartupError",
    "StateFormatError",
    "ToolError",
]


class AgentCoordError(Exception):
    """Root of every error agentcoord raises on purpose."""


class ConfigError(AgentCoordError):
    """A flag, environment variable or config file value is unusable."""


class DaemonAlreadyRunning(AgentCoordError):
    """Another daemon already serves this state or runtime directory."""


class DaemonUnreachable(AgentCoordError):
    """No daemon answered on the unix socket."""


class DaemonTimeout(DaemonUnreachable):
    """The daemon accepted the connection but did not answer in time (busy or starting)."""


class NatsStartError(AgentCoordError):
    """nats-server failed to start; ``last_lines`` holds the tail of its output."""

    def __init__(self, message: str, last_lines: list[str] | None = None) -> None:
        self.last_lines = list(last_lines or [])
        tail = "\n".join(self.last_lines[-20:])
        super().__init__(f"{message}\n--- nats-server output ---\n{tail}" if tail else message)


class ProtocolError(AgentCoordError):
    """A JSON-RPC protocol error with its numeric code."""

    def __init__(
        self,
        code: int,
        message: str,
        data: object | None = None,
        request_id: str | int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.request_id = request_id  # the id salvaged from a malformed request, if any


class StartupError(AgentCoordError):
    """A start-up phase failed or did not finish in time; the text names it and the fix."""


class StateFormatError(AgentCoordError):
    """The state dir records a format this version does not know (made by a newer one)."""


class ToolError(AgentCoordError):
    """A tool call failed; the text is shown to the calling model as an ``isError`` result."""


class InvalidArguments(ToolError):
    """The arguments of a tool call are missing, of the wrong type, or out of range."""


class IdentityError(ToolError):
    """The caller could not be identified, or is not allowed in."""


class IdentityMismatch(IdentityError):
    """An ``agent``/``from`` argument names someone other than the identified caller."""

    def __init__(self, caller: str, claimed: str, message: str = "") -> None:
        super().__init__(message or f"identity mismatch: you are {caller}, not {claimed}")
        self.caller, self.claimed = caller, claimed  # ``claimed``: the name it gave


class NotFound(ToolError):
    """The named object does not exist."""


class PeerGone(IdentityError):
    """The calling process exited, or let go of its connection, before it could be identified
    (docs/security.md "When the proof is taken")."""
