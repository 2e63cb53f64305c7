"""What the real ``codex`` binary says about its own settings, for ``agentcoord doctor``
(docs/codex.md "The shared app-server", "Hook trust").

Codex merges its config from several layers (the user's file, a trusted project's file,
profiles, managed config), so the binary is asked rather than a file read: ``codex features
list`` for the effective ``daemon_auto_start``, and its app-server's ``hooks/list`` (over stdio,
the JSON-RPC its own TUI uses) for whether the user has trusted agentcoord's hooks. Either
answers None when Codex cannot be asked; doctor then says so rather than guess.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentcoord.codex.codexsetup import FEATURE, HOOKS

__all__ = ["TRUSTED", "feature_enabled", "untrusted_hooks"]

# hooks/list's trustStatus values that let a hook run; any other (untrusted, modified) means
# Codex skips it without a word.
TRUSTED = frozenset({"trusted", "managed"})
_TIMEOUT = 30.0


def feature_enabled(
    codex: str, env: Mapping[str, str], cwd: Path, feature: str = FEATURE
) -> bool | None:
    """``feature``'s effective state as ``codex features list`` prints it in ``cwd``."""
    try:
        out = subprocess.run(
            [codex, "features", "list"],
            env=dict(env),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.stdout.splitlines():
        words = line.split()
        if words and words[0] == feature and words[-1] in ("true", "false"):
            return words[-1] == "true"
    return None


def untrusted_hooks(codex: str, env: Mapping[str, str], cwd: Path) -> list[str] | None:
    """The events whose agentcoord hook Codex would skip in ``cwd`` as not trusted (empty when
    every one it lists is trusted), None when its app-server did not answer."""
    listed = _hooks_list(codex, env, cwd)
    if listed is None:
        return None
    ours = {f" hook {name}" for _, name, _ in HOOKS.values()}
    found = []
    for entry in listed:
        for hook in entry.get("hooks", []) if isinstance(entry, dict) else []:
            command = str(hook.get("command", "")) if isinstance(hook, dict) else ""
            if any(command.endswith(o) for o in ours) and hook.get("trustStatus") not in TRUSTED:
                found.append(str(hook.get("eventName", "?")))
    return found


def _hooks_list(codex: str, env: Mapping[str, str], cwd: Path) -> list[Any] | None:
    """``hooks/list`` for ``cwd`` from a ``codex app-server`` on stdio, stopped after."""
    requests: list[dict[str, Any]] = [
        {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "agentcoord-doctor",
                                                                   "version": "1"}}},
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]  # fmt: skip
    try:
        proc = subprocess.Popen(
            [codex, "app-server"],
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
    except OSError:
        return None
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:  # the app-server answers line by line; EOF ends the reader
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert proc.stdin is not None
        for request in requests:
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", **request}) + "\n")
        proc.stdin.flush()
        while line := lines.get(timeout=_TIMEOUT):
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("id") == 2:
                data = (message.get("result") or {}).get("data")
                return data if isinstance(data, list) else None
        return None
    except (OSError, queue.Empty):
        return None
    finally:
        proc.kill()
        proc.wait()
        reader.join(timeout=_TIMEOUT)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
