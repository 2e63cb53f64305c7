"""The one exception tree of agentcoord.

Every exception class in the package is drawn here, with the module of those defined
elsewhere (``tests/test_errors.py`` checks that none is missing and none is made up)::

    AgentCoordError
    ├── ConfigError                 bad flag, environment variable or config file
    ├── DaemonAlreadyRunning        another daemon holds the state/runtime dir lock
    ├── DaemonUnreachable           no daemon answers on the socket (CLI, shim)
    │   └── DaemonTimeout           one is there but did not answer in time
    ├── NatsStartError              nats-server did not become ready (carries its last lines)
    ├── ProtocolError               a JSON-RPC level failure (code + message), see ``jsonrpc``
    ├── StartupError                a start-up phase failed or did not answer in time
    ├── StateFormatError            the state dir is of a format this version cannot open
    ├── ToolError                   a tool call came back ``isError`` (the CLI, reading it)
    ├── CasConflict                 stores/kv/_natskv.py: a KV write met a newer revision
    ├── StoreError                  stores/objects/statuserrors.py: a Kubernetes ``Status``
    │   ├── BadRequest              400 malformed body, unknown field under Strict validation
    │   ├── Forbidden               403 a write the API does not take from anyone
    │   ├── ObjectNotFound          404, also a NotFound (below)
    │   ├── MethodNotAllowed        405
    │   ├── Conflict                409 stale resourceVersion
    │   │   └── _StillConflicting   stores/objects/repository.py: every retry met a newer one
    │   ├── AlreadyExists           409 create of an existing name
    │   ├── Expired                 410 resourceVersion below the compacted point
    │   ├── RequestEntityTooLarge   413 a write body over the limit
    │   ├── UnsupportedMediaType    415 strategic merge and apply patches
    │   ├── Invalid                 422 schema or metadata validation failed
    │   ├── TooManyRequests         429 the store is closing or overloaded
    │   └── _Closed                 stores/objects/watch.py: a watch ended by its owner
    └── DomainError                 a request refused or not carried out; its text says why
        ├── InvalidArguments        wrong type, missing required argument, bad value
        │   └── FrameError          claude/inbox/frames.py: a line that is not a native frame
        ├── IdentityError           caller cannot be identified, or is refused
        │   ├── IdentityMismatch    an ``agent``/``from`` argument disagrees with the transport
        │   └── PeerGone            the caller left before it could be identified
        ├── NotFound                the named object does not exist
        │   └── ObjectNotFound      (the store's 404, above)
        ├── NotAllowed              the caller may not do this to that object
        │   ├── NotHolder           stores/kv/_claimrules.py: the claim is not the caller's
        │   ├── TooDeep             agentops/callrules.py: the turn would be too deep
        │   └── Cycle               agentops/callrules.py: the target is in the calling chain
        ├── StateConflict           the object is not in a state that allows this
        │   ├── ClaimConflict       stores/kv/claimstore.py: the key kept changing
        │   ├── StaleToken          stores/kv/_claimrules.py: not the current grant's token
        │   └── AlreadyAnswered     stores/records.py: a prompt's first answer stands
        ├── Unavailable             a part the request needs is not there or not running
        │   └── Unreachable         claude/inbox/client.py: a session's inbox took nothing
        ├── TimedOut                nobody answered within the wait the request made
        ├── OperationFailed         a step the request ran failed (git, a turn, a reload)
        │   └── DispatchFailed      localagents/_failures.py: routing or delivery failed
        └── ProfileError            localagents/profiles.py: a profile cannot be launched

    Exception (outside the tree: private, and caught in the module that raises them)
    ├── _BodyTooLarge               kernel/httpserver.py: a request body over the limit
    └── _ClientGone                 client/relay.py: the shim's client stopped reading

Stores and services raise the :class:`DomainError` that says what went wrong; they never know
who reads the text. Third-party exceptions are translated at the boundary that meets them. The
MCP core (``McpCore._tools_call`` in :mod:`agentcoord.mcp.core`) turns a :class:`DomainError`
into the tool's ``isError`` result, in one place; the mapping of these to JSON-RPC codes lives in
:func:`agentcoord.kernel.jsonrpc.error_response`, to HTTP status codes in
:func:`agentcoord.kernel.httpserver.status_for`.
"""

from __future__ import annotations

__all__ = [
    "AgentCoordError",
    "ConfigError",
    "DaemonAlreadyRunning",
    "DaemonTimeout",
    "DaemonUnreachable",
    "DomainError",
    "IdentityError",
    "IdentityMismatch",
    "InvalidArguments",
    "NatsStartError",
    "NotAllowed",
    "NotFound",
    "OperationFailed",
    "PeerGone",
    "ProtocolError",
    "StartupError",
    "StateConflict",
    "StateFormatError",
    "TimedOut",
    "ToolError",
    "Unavailable",
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
    """A tool call came back as an ``isError`` result; the text is the daemon's (the CLI
    raises it from a reply: the daemon raises :class:`DomainError`)."""


class DomainError(AgentCoordError):
    """A request the daemon refuses or cannot carry out; the text says why, in words meant for
    whoever asked (a model reads it as a tool's ``isError`` result, a person in the CLI)."""


class InvalidArguments(DomainError):
    """The arguments of a tool call are missing, of the wrong type, or out of range."""


class IdentityError(DomainError):
    """The caller could not be identified, or is not allowed in."""


class IdentityMismatch(IdentityError):
    """An ``agent``/``from`` argument names someone other than the identified caller."""

    def __init__(self, caller: str, claimed: str, message: str = "") -> None:
        super().__init__(message or f"identity mismatch: you are {caller}, not {claimed}")
        self.caller, self.claimed = caller, claimed  # ``claimed``: the name it gave


class NotFound(DomainError):
    """The named object does not exist."""


class NotAllowed(DomainError):
    """The caller is known, and may not do this to that object (someone else's offer, ask or
    claim; a depth, cycle or role rule)."""


class StateConflict(DomainError):
    """The object is not in a state that allows this: answered, closed, taken, or changed
    meanwhile."""


class Unavailable(DomainError):
    """A part the request needs is not there or not running (NATS, profiles, the daemon
    stopping)."""


class TimedOut(DomainError):
    """Nobody answered within the wait the request made (a handoff offer)."""


class OperationFailed(DomainError):
    """A step the request ran failed: a git command, an agent's turn, a delivery, a reload."""


class PeerGone(IdentityError):
    """The calling process exited, or let go of its connection, before it could be identified
    (docs/security.md "When the proof is taken")."""
