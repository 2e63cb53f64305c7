"""Every string argument of every tool, as the human and as an agent lists them, at 0, 1 KiB,
8 KiB, 64 KiB and 1 MiB (docs/security.md "Input at the boundary"): each call gets a reply
that says what was wrong (no internal error, no dropped connection), and the NATS link
survives every one of them (docs/reliability.md "The NATS link")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Daemon
from tests.security import _fuzz

FUZZ = Path(_fuzz.__file__)


def status(d: Daemon) -> dict[str, Any]:
    from agentcoord.client.rpc import call_unix

    token = (d.state_dir / "human.token").read_text().strip()
    return call_unix(d.socket, "agentcoord/status", {}, token=token)  # type: ignore[no-any-return]


def outcomes(path: Path) -> tuple[list[str], list[_fuzz.Outcome]]:
    body = json.loads(path.read_text())
    return body["tools"], [_fuzz.Outcome(**o) for o in body["outcomes"]]


def test_fuzzed_string_arguments_never_cut_the_nats_link(
    daemon_factory: Any, claude_bin: Path, tmp_path: Path
) -> None:
    """Fuzzed string arguments from both tools/list listings get clear replies; the NATS link
    never drops (no reconnect, every claim+release after a call works, /healthz ok)."""
    d = daemon_factory().start()
    before = status(d).get("nats_reconnects", 0)
    human_out, agent_out = tmp_path / "human.json", tmp_path / "agent.json"
    token = d.state_dir / "human.token"
    argv = [sys.executable, str(FUZZ), str(d.socket)]
    human = subprocess.Popen([*argv, str(human_out), "--token-file", str(token)], env=d.env)
    agent = subprocess.Popen([str(claude_bin), "--", *argv, str(agent_out)], env=d.env, cwd=d.root)
    try:
        assert human.wait(600) == 0, d.log()[-4000:]
        assert agent.wait(600) == 0, d.log()[-4000:]
    finally:
        for proc in (human, agent):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    human_tools, human_got = outcomes(human_out)
    agent_tools, agent_got = outcomes(agent_out)
    assert "answer_prompt" in human_tools
    assert "answer_prompt" not in agent_tools
    sizes = {o.size for o in human_got + agent_got}
    assert sizes == set(_fuzz.SIZES)
    assert len(human_got) > 300, len(human_got)
    assert len(agent_got) > 200, len(agent_got)
    found = _fuzz.problems(human_got) + _fuzz.problems(agent_got)
    assert not found, "\n".join(found[:40]) + "\n" + d.log()[-4000:]
    after = status(d)
    assert after.get("nats_reconnects", 0) == before, d.log()[-4000:]
    assert d.healthz() == (200, "ok"), d.log()[-4000:]
