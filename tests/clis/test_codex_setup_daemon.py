"""`agentcoord setup codex` turns Codex's shared app-server daemon off, as the real ``codex``
reads it, and ``--remove`` gives the file back byte for byte; ``doctor`` asks the real codex
whether that daemon is off and whether agentcoord's hooks are trusted (docs/codex.md "The
shared app-server", "Hook trust")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentcoord.codex.codexsetup import HOOKS
from tests.conftest import make_env


def _env(tmp_path: Path, codex: Path | None = None) -> dict[str, str]:
    env = make_env(tmp_path, HOME=str(tmp_path / "home"))
    env.pop("CODEX_HOME", None)
    if codex is not None:
        env["PATH"] = f"{codex.parent}:{env['PATH']}"
    return env


def _agentcoord(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcoord", *args],
        env=env,
        cwd=env["HOME"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _daemon_auto_start(codex: Path, env: dict[str, str]) -> str:
    """The feature's effective state as `codex features list` prints it."""
    out = subprocess.run(
        [str(codex), "features", "list"],
        env=env,
        cwd=env["HOME"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    (line,) = [w for w in out.stdout.splitlines() if w.split()[:1] == ["daemon_auto_start"]]
    return line.split()[-1]


@pytest.mark.parametrize(
    "original",
    [
        "",
        '# mine\nmodel = "o5"\n\n[features]\nweb_search = true  # keep\n\n[profiles.w]\nx = 1\n',
        "[features]\nweb_search = true",  # no newline at the end
    ],
    ids=["no-file", "own-features-table", "features-at-eof"],
)
def test_setup_turns_the_shared_daemon_off_as_codex_reads_it_and_remove_gives_it_back(
    tmp_path: Path, real_codex: Path, original: str
) -> None:
    """Codex's `features list` shows daemon_auto_start on before setup and off after it, with
    no file, or with the user's own [features] table; --remove restores the bytes (or deletes
    the file setup created) and Codex reads it on again."""
    env = _env(tmp_path)
    path = tmp_path / "home" / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    if original:
        path.write_text(original)
    assert _daemon_auto_start(real_codex, env) == "true"
    setup = _agentcoord(env, "setup", "codex")
    assert setup.returncode == 0, setup.stderr
    assert _daemon_auto_start(real_codex, env) == "false"
    assert _agentcoord(env, "setup", "codex").stdout.startswith("unchanged ")
    removed = _agentcoord(env, "setup", "codex", "--remove")
    assert removed.stdout.startswith("restored " if original else "deleted "), removed
    assert (path.read_text() if original else None) == (original or None)
    assert _daemon_auto_start(real_codex, env) == "true"


def test_setup_refuses_a_users_explicit_shared_daemon(tmp_path: Path) -> None:
    """A config.toml that turns daemon_auto_start on itself is refused in one line naming the
    setting, and left as it was."""
    env = _env(tmp_path)
    path = tmp_path / "home" / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    mine = "[features]\ndaemon_auto_start = true\n"
    path.write_text(mine)
    out = _agentcoord(env, "setup", "codex")
    assert out.returncode != 0
    assert "sets [features] daemon_auto_start = true" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert path.read_text() == mine


def _checks(env: dict[str, str]) -> dict[str, dict[str, Any]]:
    out = _agentcoord(env, "doctor", "--json")
    return {c["name"]: c for c in json.loads(out.stdout)}


def _trust_as_the_user(codex: Path, env: dict[str, str]) -> None:
    """What Codex's own TUI does when the user chooses to trust a hook: list the hooks through
    its app-server and write each one's current hash back through config/batchWrite."""
    proc = subprocess.Popen(
        [str(codex), "app-server"],
        env=env,
        cwd=env["HOME"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None

    def call(n: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None
        assert proc.stdout is not None
        request = {"jsonrpc": "2.0", "id": n, "method": method, "params": params}
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        while True:
            message = json.loads(proc.stdout.readline())
            if message.get("id") == n:
                return message["result"]  # type: ignore[no-any-return]

    try:
        call(1, "initialize", {"clientInfo": {"name": "test-user", "version": "1"}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "initialized"}) + "\n")
        (listed,) = call(2, "hooks/list", {"cwds": [env["HOME"]]})["data"]
        edits = [
            {
                "keyPath": f"hooks.state.{json.dumps(h['key'])}.trusted_hash",
                "value": h["currentHash"],
                "mergeStrategy": "upsert",
            }
            for h in listed["hooks"]
        ]
        assert len(edits) == len(HOOKS), listed  # every hook setup wrote, each trusted
        assert call(3, "config/batchWrite", {"edits": edits})["status"] == "ok"
    finally:
        proc.stdin.close()
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_doctor_asks_codex_about_its_shared_daemon_and_hook_trust(
    tmp_path: Path, real_codex: Path
) -> None:
    """With agent-coord registered by hand, doctor fails `codex daemon` (the feature is on)
    naming `agentcoord setup codex`; after setup it passes, and `codex hook trust` fails
    naming the five untrusted hooks and the step that trusts them; once the user trusts them
    in Codex, it passes."""
    env = _env(tmp_path, real_codex)
    path = Path(env["HOME"]) / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('[mcp_servers.agent-coord]\ncommand = "agentcoord"\nargs = ["mcp"]\n')
    before = _checks(env)["codex daemon"]
    assert before["ok"] is False, before
    assert "daemon_auto_start is on" in before["detail"], before
    assert before["fix"].startswith("agentcoord setup codex"), before
    path.unlink()
    assert _agentcoord(env, "setup", "codex").returncode == 0
    after = _checks(env)
    assert after["codex daemon"]["ok"] is True, after["codex daemon"]
    trust = after["codex hook trust"]
    assert trust["ok"] is False, trust
    for event in ("sessionStart", "userPromptSubmit", "postToolUse", "preToolUse", "sessionEnd"):
        assert event in trust["detail"], trust
    assert "Trust all and continue" in trust["fix"], trust
    _trust_as_the_user(real_codex, env)
    trusted = _checks(env)["codex hook trust"]
    assert (trusted["ok"], trusted["info"]) == (True, False), trusted
    # Codex recorded the trust beside the hooks, inside setup's block: setup again keeps it.
    assert "hooks.state" in path.read_text()
    assert _agentcoord(env, "setup", "codex").stdout.startswith("unchanged ")
    assert _checks(env)["codex hook trust"]["ok"] is True
    # --remove takes the records out with the hooks they trusted: the file setup created goes.
    assert _agentcoord(env, "setup", "codex", "--remove").stdout.startswith("deleted ")
    assert not path.exists()
