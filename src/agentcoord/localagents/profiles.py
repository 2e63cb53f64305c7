"""AgentProfile -> how a runner is launched: command line, environment and MCP config (pure).

Seed 000 "Getting the tools": the profile lists MCP servers by bare name; the runner gets
``AGENT_ID``, ``AGENT_INBOX_SUBJECT``, ``AGENT_STATUS_SUBJECT`` and ``MCP_SERVERS`` (the list
joined with spaces); each name resolves through ``MCP_<NAME>_URL`` (upcased, dashes to
underscores); ``agent-coord`` resolves by default to this daemon through the stdio shim, so the
daemon identifies the runner from the transport and never from ``AGENT_ID``; ``MCP_CONFIG``
pointing at a file bypasses synthesis. A name that resolves nowhere is an error, never a silent
omission (docs/profiles.md "Getting the tools").

Everything here takes values and returns values; :mod:`agentcoord.localagents.runner` spawns,
:mod:`agentcoord.localagents.profilestore` reads the store.
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcoord.errors import DomainError

__all__ = [
    "AGENT_COORD",
    "DEFAULT_PROFILE",
    "LaunchPlan",
    "Profile",
    "ProfileError",
    "backend_argv",
    "default_profile_body",
    "plan_launch",
    "profile_from_object",
    "profile_problems",
    "resolve_servers",
    "runner_env",
    "server_env_name",
    "shim_server",
    "strip_owned_flags",
]

DEFAULT_PROFILE = "default"
AGENT_COORD = "agent-coord"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
# The launcher owns the conversation format: these are removed from a configured command.
_OWNED_VALUE_FLAGS = ("--output-format", "--input-format")
_OWNED_BOOL_FLAGS = ("--verbose",)


class ProfileError(DomainError):
    """A profile cannot be launched as written (unknown backend, unresolvable MCP server...)."""


@dataclass(frozen=True)
class Profile:
    """An AgentProfile's spec as values; unset fields take the daemon's runner defaults."""

    name: str
    backend: str = "claude-code"
    mcp_servers: tuple[str, ...] = (AGENT_COORD,)
    model: str = ""
    permission_mode: str = "acceptEdits"
    allowed_tools: tuple[str, ...] = ("Read", "Edit", "Write", "Glob", "Grep")
    disallowed_tools: tuple[str, ...] = ()
    system_prompt: str = ""
    max_turns: int = 20
    max_budget_usd: float | None = None
    timeout_s: float = 900.0
    writable_paths: tuple[str, ...] = ()
    network: bool = True
    env: tuple[tuple[str, str], ...] = ()
    generation: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The view ``list_profiles`` and ``agentcoord profiles`` show."""
        return {
            "name": self.name,
            "backend": self.backend,
            "mcpServers": list(self.mcp_servers),
            "model": self.model,
            "permissionMode": self.permission_mode,
            "allowedTools": list(self.allowed_tools),
            "disallowedTools": list(self.disallowed_tools),
            "maxTurns": self.max_turns,
            "maxBudgetUsd": self.max_budget_usd,
            "timeoutSeconds": self.timeout_s,
            "writablePaths": list(self.writable_paths),
            "network": self.network,
            "generation": self.generation,
        }


def _split_tools(value: str) -> tuple[str, ...]:
    return tuple(t for t in re.split(r"[,\s]+", value) if t)


def default_profile_body(
    *, permission_mode: str, allowed_tools: str, max_turns: int, timeout_s: int
) -> dict[str, Any]:
    """The ``default`` AgentProfile created on first start, from the runner_* settings."""
    tools = [t for t in _split_tools(allowed_tools) if not t.startswith("mcp__")]
    return {
        "apiVersion": "fastverk.savvifi.com/v1",
        "kind": "AgentProfile",
        "metadata": {"name": DEFAULT_PROFILE},
        "spec": {
            "backend": "claude-code",
            "mcpServers": [AGENT_COORD],
            "permissionMode": permission_mode,
            "allowedTools": tools,
            "maxTurns": max_turns,
            "timeoutSeconds": timeout_s,
            "network": True,
        },
    }


def profile_from_object(obj: Mapping[str, Any], defaults: Profile) -> Profile:
    """The Profile of a stored AgentProfile; fields it leaves unset come from ``defaults``."""
    spec = obj.get("spec") or {}
    meta = obj.get("metadata") or {}

    def pick(key: str, fallback: Any) -> Any:
        value = spec.get(key)
        return fallback if value is None else value

    budget = spec.get("maxBudgetUsd")
    return Profile(
        name=str(meta.get("name", defaults.name)),
        backend=str(pick("backend", defaults.backend)),
        mcp_servers=tuple(str(s) for s in pick("mcpServers", defaults.mcp_servers)),
        model=str(pick("model", defaults.model)),
        permission_mode=str(pick("permissionMode", defaults.permission_mode)),
        allowed_tools=tuple(str(t) for t in pick("allowedTools", defaults.allowed_tools)),
        disallowed_tools=tuple(str(t) for t in pick("disallowedTools", defaults.disallowed_tools)),
        system_prompt=str(pick("systemPrompt", defaults.system_prompt)),
        max_turns=int(pick("maxTurns", defaults.max_turns)),
        max_budget_usd=defaults.max_budget_usd if budget is None else float(budget),
        timeout_s=float(pick("timeoutSeconds", defaults.timeout_s)),
        writable_paths=tuple(str(p) for p in pick("writablePaths", defaults.writable_paths)),
        network=bool(pick("network", defaults.network)),
        env=tuple(sorted((str(k), str(v)) for k, v in (spec.get("env") or {}).items())),
        generation=int(meta.get("generation") or 0),
    )


def server_env_name(server: str) -> str:
    """``agent-coord`` -> ``MCP_AGENT_COORD_URL`` (seed 000 "Getting the tools")."""
    return f"MCP_{server.upper().replace('-', '_').replace('.', '_')}_URL"


def _transport(server: str, url: str) -> dict[str, Any]:
    """The MCP config entry for a resolved URL: streamable HTTP (or SSE for ``.../sse``)."""
    if not url.startswith(("http://", "https://")):
        raise ProfileError(
            f"MCP server {server!r}: {server_env_name(server)}={url!r} is not an http(s) URL"
        )
    kind = "sse" if url.rstrip("/").endswith("/sse") else "http"
    return {"type": kind, "url": url}


def shim_server(shim: Sequence[str], runtime_dir: Path) -> dict[str, Any]:
    """``agent-coord`` by default: this daemon's stdio shim over its unix socket."""
    return {
        "type": "stdio",
        "command": shim[0],
        "args": list(shim[1:]),
        "env": {"AGENTCOORD_RUNTIME_DIR": str(runtime_dir)},
    }


def resolve_servers(
    names: Sequence[str], env: Mapping[str, str], default_agent_coord: dict[str, Any]
) -> dict[str, Any]:
    """The ``{"mcpServers": ...}`` config for ``names``; every unresolvable name is reported."""
    servers: dict[str, Any] = {}
    missing: list[str] = []
    for name in dict.fromkeys(names):
        if not _NAME.match(name):
            raise ProfileError(f"MCP server name {name!r} is not a bare name")
        url = env.get(server_env_name(name), "")
        if url:
            servers[name] = _transport(name, url)
        elif name == AGENT_COORD:
            servers[name] = default_agent_coord
        else:
            missing.append(name)
    if missing:
        how = ", ".join(f"{server_env_name(n)}" for n in missing)
        raise ProfileError(
            f"MCP server{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"resolve{'s' if len(missing) == 1 else ''} nowhere: set {how} (daemon environment "
            "or the profile's spec.env), or point MCP_CONFIG at a config file"
        )
    return {"mcpServers": servers}


def runner_env(agent: str, profile: Profile) -> dict[str, str]:
    """The seed's runner environment, plus the profile's own ``spec.env``."""
    return {
        **dict(profile.env),
        "AGENT_ID": agent,
        "AGENT_INBOX_SUBJECT": f"agents.{agent}.inbox",
        "AGENT_STATUS_SUBJECT": f"agents.{agent}.status",
        "MCP_SERVERS": " ".join(profile.mcp_servers),
    }


def strip_owned_flags(command: Sequence[str]) -> list[str]:
    """``command`` without the output/input format flags the launcher sets itself."""
    out: list[str] = []
    skip = False
    for arg in command:
        if skip:
            skip = False
            continue
        if arg in _OWNED_VALUE_FLAGS:
            skip = True
            continue
        if arg in _OWNED_BOOL_FLAGS or arg.startswith(tuple(f + "=" for f in _OWNED_VALUE_FLAGS)):
            continue
        out.append(arg)
    return out


def backend_argv(
    command: Sequence[str],
    profile: Profile,
    config_file: Path,
    *,
    prompt: str | None = None,
    session_args: Sequence[str] = (),
) -> list[str]:
    """``claude -p`` with the profile's flags (FACTS.md "Headless").

    Without ``prompt``: stream-json both ways, turns arrive on stdin (docs/profiles.md). With
    one: a single prompt on the command line answered as one result JSON (the operator's
    per-turn runners); ``session_args`` is ``--resume ID`` or ``--session-id UUID``.
    """
    allowed = list(profile.allowed_tools)
    for server in profile.mcp_servers:  # listing a server grants its tools (seed 000)
        if f"mcp__{server}" not in allowed:
            allowed.append(f"mcp__{server}")
    if prompt is None:
        io = ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
    else:
        io = ["--output-format", "json", " " + prompt if prompt.startswith("-") else prompt]
    argv = [
        *strip_owned_flags(command),
        *session_args,
        *io,
        "--mcp-config",
        str(config_file),
        "--strict-mcp-config",
        "--permission-mode",
        profile.permission_mode,
        "--allowedTools",
        ",".join(allowed),
        "--max-turns",
        str(profile.max_turns),
    ]
    if profile.disallowed_tools:
        argv += ["--disallowedTools", ",".join(profile.disallowed_tools)]
    if profile.model:
        argv += ["--model", profile.model]
    if profile.max_budget_usd is not None:
        argv += ["--max-budget-usd", f"{profile.max_budget_usd:g}"]
    if profile.system_prompt:
        argv += ["--append-system-prompt", profile.system_prompt]
    for path in profile.writable_paths:
        argv += ["--add-dir", path]
    return argv


@dataclass(frozen=True)
class LaunchPlan:
    """Everything the runner needs to start one agent, decided before anything is spawned."""

    argv: list[str]  # the backend command line (the sandbox wraps it)
    env: dict[str, str]  # added to the runner's environment
    mcp_config: dict[str, Any] | None  # written to config_file; None when MCP_CONFIG is used
    config_file: Path
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()
    network: bool = True
    timeout_s: float = 900.0
    profile: Profile = field(default_factory=lambda: Profile(DEFAULT_PROFILE))
    # True: turns arrive as stream-json on stdin (turns.py). False: one prompt on the command
    # line, the answer written straight into the job log (the operator's per-turn runners).
    turns_on_stdin: bool = True


def plan_launch(
    *,
    profile: Profile,
    agent: str,
    backends: Mapping[str, str],
    base_env: Mapping[str, str],
    job_dir: Path,
    default_agent_coord: dict[str, Any],
    prompt: str | None = None,
    session_args: Sequence[str] = (),
) -> LaunchPlan:
    """Translate a profile into a launch, or raise :class:`ProfileError` saying why not.

    ``prompt`` makes it a one-prompt launch (see :func:`backend_argv`), for callers that run
    one turn per process and continue the session with ``session_args``.
    """
    command = backends.get(profile.backend)
    if command is None:
        known = ", ".join(sorted(backends))
        raise ProfileError(
            f"profile {profile.name!r}: backend {profile.backend!r} is not configured "
            f"(known: {known})"
        )
    env = {**base_env, **dict(profile.env)}
    override = env.get("MCP_CONFIG", "")
    readable: list[Path] = []
    mcp: dict[str, Any] | None
    if override:
        config_file = Path(override).expanduser()
        if not config_file.is_absolute() or not config_file.is_file():
            raise ProfileError(f"MCP_CONFIG={override!r} is not an absolute path to a file")
        readable.append(config_file)
        mcp = None
    else:
        config_file = job_dir / "mcp.json"
        mcp = resolve_servers(profile.mcp_servers, env, default_agent_coord)
    writable = []
    for raw in profile.writable_paths:
        path = Path(raw).expanduser()
        if not path.is_absolute():
            raise ProfileError(f"profile {profile.name!r}: writable path {raw!r} is not absolute")
        writable.append(path)
    return LaunchPlan(
        argv=backend_argv(
            shlex.split(command),
            profile,
            config_file,
            prompt=prompt,
            session_args=session_args,
        ),
        env=runner_env(agent, profile),
        mcp_config=mcp,
        config_file=config_file,
        writable=tuple(writable),
        readable=tuple(readable),
        network=profile.network,
        timeout_s=profile.timeout_s,
        profile=profile,
        turns_on_stdin=prompt is None,
    )


def profile_problems(
    profile: Profile, backends: Mapping[str, str], env: Mapping[str, str]
) -> list[str]:
    """What ``doctor`` reports for a profile: backends or MCP servers that are not there."""
    problems = []
    command = backends.get(profile.backend)
    if command is None:
        problems.append(f"backend {profile.backend!r} is not configured")
    else:
        argv = shlex.split(command)
        if not argv or shutil.which(argv[0], path=env.get("PATH")) is None:
            exe = argv[0] if argv else "(empty)"
            problems.append(f"backend {profile.backend!r}: {exe} is not installed")
    merged = {**env, **dict(profile.env)}
    if merged.get("MCP_CONFIG"):
        if not Path(merged["MCP_CONFIG"]).is_file():
            problems.append(f"MCP_CONFIG {merged['MCP_CONFIG']} is not a file")
        return problems
    try:
        resolve_servers(profile.mcp_servers, merged, {})
    except ProfileError as exc:
        problems.append(str(exc))
    return problems
