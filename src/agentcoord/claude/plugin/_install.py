"""Install and remove the plugin through the real ``claude plugin`` commands.

Install: generate the marketplace (:func:`write_plugin`) into the data dir, then
``claude plugin marketplace add <dir>`` (user settings: the path is this machine's) and
``claude plugin install agentcoord@agentcoord-local --scope user|project``. A local directory
plugin loads in place, so installing again after an upgrade regenerates the files and the next
session uses them (seen with Claude Code 2.1.328: "it loads in place from <dir>").

Remove: ``claude plugin uninstall`` from that scope and, once no scope has it,
``claude plugin marketplace remove``. Claude Code leaves emptied containers behind
(``"enabledPlugins": {}``, ``{"version": 2, "plugins": {}}``), so before its first change each
file it edits is recorded (under the state dir, private) and given back byte for byte when
what is left is the original plus such empties; a file edited in other ways since is left as
Claude Code wrote it (docs/plugin.md "Removal").
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcoord.claude.configure import SERVER_NAME, user_config_file
from agentcoord.claude.plugin._generate import MARKETPLACE_NAME, PLUGIN_ID, write_plugin
from agentcoord.errors import ConfigError
from agentcoord.kernel import setuprecord

__all__ = ["PluginReport", "install_plugin", "plugin_home", "remove_plugin", "set_up_directly"]

_TIMEOUT = 120.0  # one `claude plugin ...` command; the binary's own start is ~1 s


@dataclass
class PluginReport:
    """What install or remove did, for the CLI to print."""

    marketplace: Path
    scope: str
    done: list[str] = field(default_factory=list)  # one line per `claude plugin` step
    restored: list[Path] = field(default_factory=list)  # given back byte for byte
    removed: list[Path] = field(default_factory=list)  # files or dirs the install created
    kept: list[Path] = field(default_factory=list)  # edited since: left as Claude Code wrote


def plugin_home(env: Mapping[str, str]) -> Path:
    """Where the generated marketplace lives: ``$XDG_DATA_HOME/agentcoord/claude-plugin``.
    Not the state dir: a sandboxed runner cannot read that, and its sessions load the plugin
    too when it is enabled in user settings (docs/plugin.md "What it installs")."""
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    return (
        Path(env.get("XDG_DATA_HOME") or home / ".local" / "share") / "agentcoord" / "claude-plugin"
    )


def _watched(claude_dir: Path, project: Path | None) -> list[Path]:
    """The files ``claude plugin`` edits for us: settings (the marketplace, enabledPlugins) and
    its plugin registry."""
    files = [
        claude_dir / "settings.json",
        claude_dir / "plugins" / "installed_plugins.json",
        claude_dir / "plugins" / "known_marketplaces.json",
    ]
    if project is not None:
        files.append(project / ".claude" / "settings.json")
    return files


def _cache_dir(claude_dir: Path) -> Path:
    return claude_dir / "plugins" / "cache" / MARKETPLACE_NAME


def set_up_directly(home: Path, claude_dir: Path) -> bool:
    """Whether user-scope config registers ``agent-coord`` itself (``setup claude``): with the
    plugin as well, a session would run two servers and every hook twice."""
    servers = _load(user_config_file(home, claude_dir))
    servers = servers.get("mcpServers") if isinstance(servers, dict) else None
    return isinstance(servers, dict) and SERVER_NAME in servers


# -- running claude -----------------------------------------------------------------------------


def _claude(env: Mapping[str, str]) -> str:
    found = shutil.which("claude", path=env.get("PATH"))
    if found is None:
        raise ConfigError(
            "no `claude` on PATH: install Claude Code first (npm i -g @anthropic-ai/claude-code)"
        )
    return found


def _run(
    claude: str,
    args: list[str],
    env: Mapping[str, str],
    cwd: Path,
    *,
    tolerate: tuple[str, ...] = (),
) -> dict[str, Any]:
    """One ``claude plugin ... --json`` command; its result line. A failure whose
    ``failureCode`` is in ``tolerate`` is returned, any other raises with Claude Code's
    message."""
    try:
        done = subprocess.run(
            [claude, "plugin", *args, "--json"],
            env=dict(env),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"`claude plugin {' '.join(args)}` did not finish in {_TIMEOUT:.0f}s"
        ) from None
    result: dict[str, Any] = {}
    for line in reversed(done.stdout.splitlines()):
        with contextlib.suppress(ValueError):
            parsed = json.loads(line)
            if isinstance(parsed, dict):
                result = parsed
                break
    if done.returncode == 0 and result.get("outcome", "ok") == "ok":
        return result
    if result.get("failureCode") in tolerate:
        return result
    why = result.get("message") or done.stderr.strip() or done.stdout.strip()
    raise ConfigError(f"`claude plugin {' '.join(args)}` failed: {why}")


def _list_json(claude: str, args: list[str], env: Mapping[str, str], cwd: Path) -> list[Any]:
    done = subprocess.run(
        [claude, "plugin", *args, "--json"],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        listed = json.loads(done.stdout)
    except ValueError:
        raise ConfigError(
            f"`claude plugin {' '.join(args)}` printed no JSON: {done.stderr.strip()}"
        ) from None
    return listed if isinstance(listed, list) else []


# -- the record of each file before Claude Code's first change --------------------------------


# Keys Claude Code writes into a registry file it creates, whatever it holds.
_FORMAT_KEYS = ("version",)


def bare(data: Any, like: Any) -> Any:
    """``data`` without the empty objects and lists (and, in a file that was not there, the
    format keys) that ``like`` does not have, at any depth (pure)."""
    if not isinstance(data, dict):
        return data
    like = like if isinstance(like, dict) else {}
    out = {}
    for key, value in data.items():
        if key not in like and (value in ({}, []) or (not like and key in _FORMAT_KEYS)):
            continue
        pruned = bare(value, like.get(key))
        if key not in like and pruned in ({}, []):
            continue
        out[key] = pruned
    return out


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        return None


def _give_back(backups: Path, path: Path, report: PluginReport) -> list[Path]:
    """Restore ``path`` from its record when only emptied containers differ; returns the dirs
    the install created for it (to remove when empty)."""
    recalled = setuprecord.recall(backups, path)
    if recalled is None:
        return []
    dirs: list[Path] = []
    now = _load(path) if path.exists() else {}
    if recalled.created:
        if not path.exists():
            dirs = recalled.dirs
        elif bare(now, {}) == {}:
            path.unlink()
            report.removed.append(path)
            dirs = recalled.dirs
        else:
            report.kept.append(path)
    else:
        was = recalled.original_json()
        if now is not None and was is not None and bare(now, was) == was:
            if not path.exists() or path.read_bytes() != recalled.original:
                setuprecord.restore_bytes(path, recalled.original)
                report.restored.append(path)
        else:
            report.kept.append(path)
    recalled.record.unlink()
    return dirs


# -- install and remove -----------------------------------------------------------------------


def install_plugin(
    env: Mapping[str, str],
    claude_dir: Path,
    state_dir: Path,
    project: Path | None = None,
    *,
    command: str | None = None,
    http_addr: str | None = None,
) -> PluginReport:
    """Generate the marketplace and install the plugin at user scope, or for ``project``
    (its ``.claude/settings.json``); idempotent. ``command`` is the ``agentcoord`` the
    plugin runs, ``http_addr`` where its http hooks post (defaults: :func:`write_plugin`'s).
    The marketplace is always declared in user settings: its path is this machine's."""
    claude = _claude(env)
    cwd = project or Path(env.get("HOME") or Path.home())
    scope = "project" if project is not None else "user"
    backups = state_dir / "claude-plugin"
    where = plugin_home(env)
    report = PluginReport(where, scope)
    for path in _watched(claude_dir, project):
        setuprecord.remember(backups, path)
    write_plugin(where, command, http_addr)
    report.done.append(f"wrote the marketplace {where}")
    known = _list_json(claude, ["marketplace", "list"], env, cwd)
    for mp in known:
        if isinstance(mp, dict) and mp.get("name") == MARKETPLACE_NAME:
            if Path(str(mp.get("path", ""))) != where:  # moved (another XDG_DATA_HOME): re-add
                _run(claude, ["marketplace", "remove", MARKETPLACE_NAME], env, cwd)
            break
    added = _run(claude, ["marketplace", "add", str(where), "--scope", "user"], env, cwd)
    report.done.append(added.get("message") or f"added the marketplace {MARKETPLACE_NAME}")
    installed = _run(claude, ["install", PLUGIN_ID, "--scope", scope], env, cwd)
    report.done.append(installed.get("message") or f"installed {PLUGIN_ID} ({scope})")
    return report


def remove_plugin(
    env: Mapping[str, str],
    claude_dir: Path,
    state_dir: Path,
    project: Path | None = None,
) -> PluginReport:
    """Undo :func:`install_plugin` for that scope; with no scope left, remove the marketplace,
    its files and Claude Code's copy, and give every recorded file back."""
    claude = _claude(env)
    cwd = project or Path(env.get("HOME") or Path.home())
    scope = "project" if project is not None else "user"
    backups = state_dir / "claude-plugin"
    where = plugin_home(env)
    report = PluginReport(where, scope)
    gone = _run(
        claude,
        ["uninstall", PLUGIN_ID, "--scope", scope],
        env,
        cwd,
        tolerate=("not_installed", "not_installed_at_scope", "not_found"),
    )
    report.done.append(gone.get("message") or f"uninstalled {PLUGIN_ID} ({scope})")
    listed = _list_json(claude, ["list"], env, cwd)
    still = [p for p in listed if isinstance(p, dict) and p.get("id") == PLUGIN_ID]
    created: set[Path] = set()
    if project is not None:
        created.update(_give_back(backups, project / ".claude" / "settings.json", report))
    if still:
        scopes = ", ".join(sorted({str(p.get("scope")) for p in still}))
        report.done.append(f"the marketplace stays: {PLUGIN_ID} is still installed ({scopes})")
    else:
        dropped = _run(
            claude,
            ["marketplace", "remove", MARKETPLACE_NAME],
            env,
            cwd,
            tolerate=("not_configured", "not_found"),
        )
        report.done.append(dropped.get("message") or f"removed the marketplace {MARKETPLACE_NAME}")
        for tree in (_cache_dir(claude_dir), where):
            if tree.exists():
                shutil.rmtree(tree)
                report.removed.append(tree)
        for path in _watched(claude_dir, None):
            created.update(_give_back(backups, path, report))
        for d in (_cache_dir(claude_dir).parent, where.parent, backups):
            with contextlib.suppress(OSError):  # holds something else: stays
                d.rmdir()
    setuprecord.remove_dirs(list(created))
    return report
