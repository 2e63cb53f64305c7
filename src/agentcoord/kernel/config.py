"""Configuration as data: one frozen :class:`Config`, built once in the entry point.

Precedence, highest first: command-line flags, ``AGENTCOORD_*`` environment variables, the TOML
config file (``--config``, ``AGENTCOORD_CONFIG`` or ``$XDG_CONFIG_HOME/agentcoord/config.toml``),
then defaults. Components receive a Config; none of them reads ``os.environ`` itself.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from agentcoord.errors import AgentCoordError, ConfigError
from agentcoord.kernel.locate import (
    default_runtime_dir,
    default_state_dir,
    locate,
    pointer_path,
    settled,
)

__all__ = ["DEFAULT_HTTP_ADDR", "STORES", "Config", "load_config", "parse_http_addr"]

DEFAULT_HTTP_ADDR = "127.0.0.1:7420"
STORES = ("sqlite", "kubernetes")

# environment variable -> Config field
_ENV_FIELDS = {
    "AGENTCOORD_STATE_DIR": "state_dir",
    "AGENTCOORD_RUNTIME_DIR": "runtime_dir",
    "AGENTCOORD_HTTP_ADDR": "http_addr",
    "AGENTCOORD_KUBE_ADDR": "kube_addr",
    "AGENTCOORD_NATS_URL": "nats_url",
    "AGENTCOORD_LOG_LEVEL": "log_level",
    "AGENTCOORD_STORE": "store",
    "AGENTCOORD_KUBECONFIG": "kubeconfig",
    "AGENTCOORD_KUBE_NAMESPACE": "kube_namespace",
    "AGENTCOORD_NATS_SYNC": "nats_sync",
    "AGENTCOORD_SESSION_RETENTION": "session_retention",
    "AGENTCOORD_AUTO_EDIT_LEASES": "auto_edit_leases",
    "AGENTCOORD_EDIT_LEASE_QUIET": "edit_lease_quiet",
    "AGENTCOORD_CONSOLE_LOGIN_TTL": "console_login_ttl",
    "AGENTCOORD_PERMISSION_HOLD": "permission_hold",
    "AGENTCOORD_NOTIFY_QUIET_HOURS": "notify_quiet_hours",
    "AGENTCOORD_MAX_SESSIONS": "max_sessions",
    "AGENTCOORD_MAX_AGENTS": "max_agents",
    "AGENTCOORD_MAX_SPEND_USD": "max_spend_usd",
    # --- local agents (docs/localagents.md "Configuration"): AgentiBridge's names first, ours win
    # when both are set ---
    "AGENTIBRIDGE_LOCAL_AGENTS_ENABLED": "local_agents_enabled",
    "AGENTIHUB_DIR": "agentihub_dir",
    "AGENTIBRIDGE_LOCAL_SESSION_TTL": "local_session_ttl",
    "AGENTCOORD_LOCAL_AGENTS_ENABLED": "local_agents_enabled",
    "AGENTCOORD_AGENTIHUB_DIR": "agentihub_dir",
    "AGENTCOORD_LOCAL_SESSION_TTL": "local_session_ttl",
    "AGENTCOORD_RUNNER_COMMAND": "runner_command",
    "AGENTCOORD_RUNNER_TIMEOUT": "runner_timeout",
    "AGENTCOORD_RUNNER_SANDBOX": "runner_sandbox",
    # --- end local agents ---
    # --- external NATS (docs/one-host-to-many.md) ---
    "AGENTCOORD_NATS_REPLICAS": "nats_replicas",
    "AGENTCOORD_NATS_USER": "nats_user",
    "AGENTCOORD_NATS_PASSWORD": "nats_password",
    "AGENTCOORD_NATS_NKEY_SEED": "nats_nkey_seed",
    "AGENTCOORD_NATS_CREDS": "nats_creds",
    "AGENTCOORD_NATS_TLS_CA": "nats_tls_ca",
    "AGENTCOORD_NATS_TLS_CERT": "nats_tls_cert",
    "AGENTCOORD_NATS_TLS_KEY": "nats_tls_key",
    "AGENTCOORD_HOST_ID": "host_id",
    # --- end external NATS ---
    # --- state retention (docs/reliability.md "State retention") ---
    "AGENTCOORD_AUDIT_MAX_AGE": "audit_max_age",
    "AGENTCOORD_AUDIT_MAX_BYTES": "audit_max_bytes",
    "AGENTCOORD_INBOX_MAX_AGE": "inbox_max_age",
    "AGENTCOORD_INBOX_MAX_MSGS": "inbox_max_msgs",
    "AGENTCOORD_INBOX_MAX_BYTES": "inbox_max_bytes",
    "AGENTCOORD_OBJECT_LOG_KEEP": "object_log_keep",
    "AGENTCOORD_CHECKPOINT_KEEP": "checkpoint_keep",
    "AGENTCOORD_CHECKPOINT_MAX_BYTES": "checkpoint_max_bytes",
    # --- end state retention ---
    # --- connection and request limits (docs/security.md "Limits") ---
    "AGENTCOORD_HTTP_CONNS_OWNER": "http_conns_owner",
    "AGENTCOORD_HTTP_CONNS_PER_UID": "http_conns_per_uid",
    "AGENTCOORD_HTTP_CONNS_OTHER_UIDS": "http_conns_other_uids",
    "AGENTCOORD_HTTP_IDLE_TIMEOUT": "http_idle_timeout",
    "AGENTCOORD_HTTP_HEADER_TIMEOUT": "http_header_timeout",
    "AGENTCOORD_HTTP_BODY_TIMEOUT": "http_body_timeout",
    "AGENTCOORD_MCP_MAX_INFLIGHT": "mcp_max_inflight",
    "AGENTCOORD_MCP_MAX_CALLER_RUNNING": "mcp_max_caller_running",
    "AGENTCOORD_MCP_MAX_BATCH": "mcp_max_batch",
    "AGENTCOORD_MCP_MAX_REPLY_BYTES": "mcp_max_reply_bytes",
    "AGENTCOORD_KUBE_MAX_OBJECT_BYTES": "kube_max_object_bytes",
    # --- end connection and request limits ---
}


@dataclass(frozen=True)
class Config:
    """Everything the daemon and CLI need to know, resolved once."""

    state_dir: Path
    runtime_dir: Path
    http_addr: str = DEFAULT_HTTP_ADDR
    kube_addr: str = "127.0.0.1:0"  # the kubectl-facing object API (TLS); see kube.addr
    claude_dir: Path = field(default_factory=lambda: Path.home() / ".claude")
    # kubectl's credentials (``~/.kube``, ``$KUBECONFIG``): masked in the runners' sandbox,
    # since a kubeconfig for this daemon carries the owner's client key.
    kube_credentials: tuple[Path, ...] = ()
    user: str = "user"
    nats_url: str | None = None  # an existing NATS server instead of the embedded one
    log_level: str = "INFO"
    # The object store (docs/store.md): "sqlite" (the daemon's own, serving the kubectl API) or
    # "kubernetes" (a real API server through ``kubeconfig``; the daemon serves no kube API).
    store: str = "sqlite"
    kubeconfig: Path | None = None  # None: $KUBECONFIG (its first file) or ~/.kube/config
    kube_namespace: str = "default"  # where the daemon keeps its objects, on either store
    max_request_bytes: int = 4 * 1024 * 1024
    tools_page_size: int = 100
    nats_server_bin: Path | None = None
    # JetStream's sync_interval for the embedded server. nats-server writes every message to
    # the OS before it acknowledges it, so a SIGKILL of it or of the daemon loses nothing
    # (tests/reliability); the interval is how often it fsyncs. "2m" is nats-server's own
    # default; "always" fsyncs before each ack, which also survives an OS crash or power loss
    # at about half the claim throughput (bench/REPORT.md).
    nats_sync: str = "2m"
    # Seconds an ended session agent (its claude process exited) is kept, with its inbox and
    # focus, before it is removed (docs/localagents.md "Session lifetime").
    session_retention: int = 24 * 3600
    # Automatic edit leases (docs/claims.md "Claiming files"): a session's first edit of a file
    # takes a write claim on it, renewed by each later edit, released when the session ends or
    # after edit_lease_quiet seconds without an edit (the file and environment also take "10m").
    auto_edit_leases: bool = True
    edit_lease_quiet: int = 600
    # Seconds a console login code from `agentcoord console` stays good (it is good once);
    # docs/security.md "Console login".
    console_login_ttl: int = 120
    # Seconds a permission dialog no standing approval answers is held open for an answer from
    # the console or `agentcoord top`, at most 590; 0 (the default) holds none (docs/
    # approvals.md "Answering an open dialog").
    permission_hold: int = 0
    # Local hours with no desktop notices, "HH:MM-HH:MM" (may cross midnight); "" never
    # quiet (docs/activity.md "Desktop notices").
    notify_quiet_hours: str = ""
    # Budgets across sessions (docs/budgets.md "Ceilings"), each off at 0: live sessions
    # (shown over it, never refused), started agents and today's spend in US dollars (a start
    # past either is refused).
    max_sessions: int = 0
    max_agents: int = 0
    max_spend_usd: float = 0.0
    config_file: Path | None = None
    # Where the runtime dir goes without $XDG_RUNTIME_DIR: <first>/$UID/agentcoord when that
    # is the user's dir, else <second>/agentcoord-$UID (docs/daemon.md "Finding the daemon");
    # a setting for containers and tests, read from the config file only.
    runtime_roots: tuple[Path, Path] = (Path("/run/user"), Path("/tmp"))
    # The HTTP address came from a flag, the environment or the config file: it is used as
    # given or the start fails; never replaced by another port (README "Where things live").
    http_addr_chosen: bool = False
    # Where the daemon leaves its pointer for clients with a stripped environment
    # (agentcoord.kernel.locate.pointer_path: under HOME, no other variable); None: none is left.
    pointer_file: Path | None = None
    # systemd integration, read from the environment once (sd_notify, socket activation).
    notify_socket: str | None = None
    watchdog_interval: float | None = None
    listen_fds: tuple[tuple[int, str], ...] = ()
    # --- local agents (docs/localagents.md "Configuration"); off by default ---
    local_agents_enabled: bool = False
    agentihub_dir: Path | None = None  # None: sibling-directory discovery at start
    local_session_ttl: int = 3600  # seconds a session stays "online" after its last activity
    # The claude-code backend's command, shlex-split; the launcher appends the stream-json and
    # profile flags (docs/profiles.md). Other backends: the ``backends`` table.
    runner_command: str = "claude -p"
    runner_permission_mode: str = "acceptEdits"
    runner_allowed_tools: str = "Read,Edit,Write,Glob,Grep,mcp__agent-coord"
    runner_max_turns: int = 20
    runner_timeout: int = 900  # seconds, then the runner's process group is killed
    runner_sandbox: str = "auto"  # "auto" (bwrap if found), "none", or a bwrap path
    # --- end local agents ---
    # --- external NATS (docs/one-host-to-many.md); only with nats_url, checked by natsremote ---
    nats_replicas: int = 1  # JetStream replicas of the KV buckets and streams (3 on a cluster)
    nats_user: str | None = None  # or user:password in the URL
    nats_password: str | None = None
    nats_nkey_seed: Path | None = None  # a file holding the user's nkey seed (SU...)
    nats_creds: Path | None = None  # a .creds file (user JWT + nkey seed)
    nats_tls_ca: Path | None = None  # CA bundle that signed the servers' certificates
    nats_tls_cert: Path | None = None  # client certificate (mutual TLS), with nats_tls_key
    nats_tls_key: Path | None = None
    host_id: str | None = None  # qualifies session agent names; default: the hostname
    # --- end external NATS ---
    # --- agent profiles (docs/profiles.md "Backends"): backend name -> runner command;
    # claude-code defaults to runner_command. From the TOML table ``[backends]`` only. ---
    backends: tuple[tuple[str, str], ...] = ()
    # --- state retention (docs/reliability.md "State retention"): every store that only
    # grows gets a bound, whichever limit is reached first. Durations in seconds (the file
    # and environment also take "30d", "12h", "90m"), sizes in bytes (also "64MiB", "1GiB").
    audit_max_age: int = 30 * 86400  # the AGENT_EVENTS stream
    audit_max_bytes: int = 64 << 20
    inbox_max_age: int = 7 * 86400  # the AGENT_MESSAGES stream (inboxes, channels)
    inbox_max_msgs: int = 10_000  # per inbox, per channel, and on the broadcast subject
    inbox_max_bytes: int = 256 << 20  # the whole AGENT_MESSAGES stream
    object_log_keep: int = 10_000  # object store events kept for watches (at most twice this)
    checkpoint_keep: int = 10  # bundles per agent; its newest is never removed
    checkpoint_max_bytes: int = 2 << 30  # all bundles together (newest per agent exempt)
    # --- end state retention ---
    # --- connection and request limits (docs/security.md "Limits"): what one caller or one
    # local user can make the daemon hold. Times in seconds, sizes in bytes. ---
    http_conns_owner: int = 512  # open HTTP connections from the daemon's own uid
    http_conns_per_uid: int = 16  # from each other uid (all of them refused anyway)
    http_conns_other_uids: int = 64  # from all other uids together
    http_idle_timeout: int = 60  # a keep-alive connection with no request in this long
    http_header_timeout: int = 10  # from a request's first byte to its whole head
    http_body_timeout: int = 30  # from the head to the whole body
    mcp_max_inflight: int = 64  # unanswered requests per unix connection; then no reading
    mcp_max_caller_running: int = 64  # requests of one caller running at once, all connections
    mcp_max_batch: int = 64  # messages in one JSON-RPC batch
    mcp_max_reply_bytes: int = 16 << 20  # one reply (a batch's replies together)
    kube_max_object_bytes: int = 1536 << 10  # one object through the kube API
    # --- end connection and request limits ---

    def backend_commands(self) -> dict[str, str]:
        """Every configured backend's command; ``claude-code`` is always there."""
        return {"claude-code": self.runner_command, **dict(self.backends)}

    @property
    def socket_path(self) -> Path:
        return self.runtime_dir / "agentcoord.sock"

    @property
    def http_addr_file(self) -> Path:
        return self.runtime_dir / "http.addr"

    @property
    def http_host(self) -> str:
        return parse_http_addr(self.http_addr)[0]

    @property
    def http_port(self) -> int:
        return parse_http_addr(self.http_addr)[1]


def parse_http_addr(addr: str) -> tuple[str, int]:
    """Split ``host:port`` (``:0`` = loopback, free port); refuse anything off loopback."""
    host, sep, port_s = addr.rpartition(":")
    if not sep:
        raise ConfigError(f"http address {addr!r} is not host:port")
    host = host.strip("[]") or "127.0.0.1"
    if host == "localhost":
        host = "127.0.0.1"
    try:
        port = int(port_s)
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise ConfigError(f"http address {addr!r} is not an IP address and port") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"http port {port} is out of range")
    if not ip.is_loopback:
        # Never bound off loopback (docs/security.md "By transport").
        raise ConfigError(f"http address {addr!r} is not a loopback address")
    return host, port


def _default_dirs(env: Mapping[str, str], uid: int) -> tuple[Path, Path, Path]:
    home = Path(env.get("HOME") or Path.home())
    # AGENTCOORD_* overrides are applied later with the other environment variables.
    plain = {k: v for k, v in env.items() if not k.startswith("AGENTCOORD_")}
    claude_dir = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    # The file's dirs are applied later too (load_config reads it once, as a whole).
    return default_state_dir(plain), default_runtime_dir(plain, uid, {}), claude_dir


def _user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


# Fields that come from the process environment only, never from a file or flag.
_DERIVED = {
    "notify_socket",
    "watchdog_interval",
    "listen_fds",
    "config_file",
    "http_addr_chosen",
    "pointer_file",
}


def _coerce(name: str, value: Any) -> Any:
    kinds = {f.name: f.type for f in fields(Config)}
    if name not in kinds or name in _DERIVED:
        raise ConfigError(f"unknown config key {name!r}")
    kind = str(kinds[name])
    if name == "backends":
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ConfigError("config key 'backends' must be a table of name = \"command\"")
        return tuple(sorted((str(k), v) for k, v in value.items()))
    if name == "runtime_roots":
        if not isinstance(value, list) or len(value) != 2:
            raise ConfigError(
                'config key \'runtime_roots\' must be two directories, e.g. ["/run/user", "/tmp"]'
            )
        return (Path(str(value[0])).expanduser(), Path(str(value[1])).expanduser())
    if name in _RETENTION_DURATIONS | _RETENTION_SIZES | _RETENTION_COUNTS:
        return _retention_value(name, value)
    try:
        if "Path" in kind:
            return None if value in (None, "") else Path(str(value)).expanduser()
        if kind == "int":
            return int(value)
        if kind == "float":
            number = float(value)
            if number < 0 or number != number:
                raise ValueError(value)
            return number
        if kind == "bool":
            return _truthy(value)
        return None if value is None else str(value)
    except (TypeError, ValueError):
        raise ConfigError(f"config key {name!r} has a bad value {value!r}") from None


_RETENTION_DURATIONS = {"audit_max_age", "inbox_max_age", "edit_lease_quiet"}
_RETENTION_SIZES = {"audit_max_bytes", "inbox_max_bytes", "checkpoint_max_bytes"}
_RETENTION_COUNTS = {"inbox_max_msgs", "object_log_keep", "checkpoint_keep"}
_SIZE_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1 << 10, "m": 10**6, "mb": 10**6}
_SIZE_UNITS |= {"mib": 1 << 20, "g": 10**9, "gb": 10**9, "gib": 1 << 30}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")
_DAYS = re.compile(r"(\d+(?:\.\d+)?)d")


def _retention_value(name: str, value: Any) -> int:
    """A retention limit as whole seconds or bytes, at least 1 (a zero would mean "no limit"
    to JetStream, the opposite of what was asked)."""
    text = str(value).strip().lower()
    try:
        if isinstance(value, bool):
            raise ValueError(text)
        if isinstance(value, int) or text.isdigit():
            out = int(text)
        elif name in _RETENTION_DURATIONS:
            from agentcoord.kernel.duration import parse_duration

            days = _DAYS.fullmatch(text)
            out = int(float(days.group(1)) * 86400) if days else int(parse_duration(text))
        elif name in _RETENTION_COUNTS:
            raise ValueError(text)
        else:
            m = _SIZE.fullmatch(text)
            if m is None or m.group(2) not in _SIZE_UNITS:
                raise ValueError(text)
            out = int(float(m.group(1)) * _SIZE_UNITS[m.group(2)])
    except (TypeError, ValueError, AgentCoordError):
        unit = "e.g. 64MiB"
        if name in _RETENTION_DURATIONS:
            unit = "seconds or e.g. 30d, 12h"
        elif name in _RETENTION_COUNTS:
            unit = "a whole number"
        raise ConfigError(f"config key {name!r} has a bad value {value!r} ({unit})") from None
    if out < 1:
        raise ConfigError(f"config key {name!r} must be at least 1, not {value!r}")
    return out


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(text)


def load_config(
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    uid: int | None = None,
) -> Config:
    """Build the Config from flags (None = unset), environment and the TOML file."""
    env = os.environ if env is None else env
    flags = {k: v for k, v in (flags or {}).items() if v is not None}
    uid = os.getuid() if uid is None else uid
    state, runtime, claude_dir = _default_dirs(env, uid)
    values: dict[str, Any] = {
        "state_dir": state,
        "runtime_dir": runtime,
        "claude_dir": claude_dir,
        "kube_credentials": _kube_credentials(env),
        "user": env.get("USER") or env.get("LOGNAME") or _user_name(uid),
    }

    chosen: set[str] = set()  # fields a flag, variable or the file set
    config_file = flags.get("config_file") or env.get("AGENTCOORD_CONFIG")
    if config_file is None:
        xdg = Path(env.get("XDG_CONFIG_HOME") or Path(env.get("HOME", "~")) / ".config")
        candidate = xdg.expanduser() / "agentcoord" / "config.toml"
        config_file = candidate if candidate.is_file() else None
    if config_file is not None:
        import tomllib  # only with a config file: its import is ~3 ms of start-up

        path = Path(str(config_file)).expanduser()
        try:
            data = tomllib.loads(path.read_text())
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
        for key, value in data.items():
            values[key.replace("-", "_")] = _coerce(key.replace("-", "_"), value)
            chosen.add(key.replace("-", "_"))
        values["config_file"] = path  # set after the loop: not a key the file may set

    for var, name in _ENV_FIELDS.items():
        if env.get(var):
            values[name] = _coerce(name, env[var])
            chosen.add(name)
    for name, value in flags.items():
        if name != "config_file":  # read above, as the file itself
            values[name] = _coerce(name, value)
            chosen.add(name)

    values["http_addr_chosen"] = "http_addr" in chosen
    values["pointer_file"] = pointer_path(env, uid)
    if "runtime_dir" not in chosen:
        # No one named the runtime dir: the user's daemon may serve where this environment
        # would not look (docs/daemon.md "Finding the daemon").
        runtime, pointed = settled(locate(env, uid), uid)
        values["runtime_dir"] = runtime
        if pointed is not None and "state_dir" not in chosen:
            values["state_dir"] = pointed

    from agentcoord.kernel.activation import listen_fds, watchdog_interval

    pid = os.getpid()
    values["notify_socket"] = env.get("NOTIFY_SOCKET") or None
    values["watchdog_interval"] = watchdog_interval(env, pid)
    values["listen_fds"] = listen_fds(env, pid)
    if values.get("kubeconfig") is None:
        values["kubeconfig"] = default_kubeconfig(env)
    cfg = Config(**values)
    if cfg.store not in STORES:
        raise ConfigError(f"store {cfg.store!r} is not one of {', '.join(STORES)}")
    parse_http_addr(cfg.http_addr)  # validate early, with a clear message
    parse_http_addr(cfg.kube_addr)
    from agentcoord.kernel.natsremote import check_nats_config

    check_nats_config(cfg)  # external NATS fields, with clear messages
    return cfg


def _kube_credentials(env: Mapping[str, str]) -> tuple[Path, ...]:
    home = Path(env.get("HOME") or Path.home())
    files = [Path(p).expanduser() for p in (env.get("KUBECONFIG") or "").split(os.pathsep) if p]
    return (home / ".kube", *files)


def default_kubeconfig(env: Mapping[str, str]) -> Path:
    """kubectl's choice: the first file of ``$KUBECONFIG``, else ``~/.kube/config``."""
    for part in (env.get("KUBECONFIG") or "").split(os.pathsep):
        if part:
            return Path(part).expanduser()
    return Path(env.get("HOME") or Path.home()) / ".kube" / "config"


def with_overrides(cfg: Config, **changes: Any) -> Config:
    """A copy of ``cfg`` with some fields changed (tests, the CLI)."""
    return replace(cfg, **changes)
