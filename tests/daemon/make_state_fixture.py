"""Make a state dir the way a release leaves it after normal use, and pack it as a fixture.

Run with the release's own code first on the path (a worktree of its tag), e.g.:

    git worktree add /tmp/rel v0.1.0
    PYTHONPATH=/tmp/rel/src:/tmp/rel python tests/daemon/make_state_fixture.py OUT.tar.gz

It leaves: a claim still held and one released, a message queued for an absent session, a
channel with history, focus, an open human prompt, an AgentProfile, a spawned agent with a
checkpoint bundle, and ``fixture.json`` naming them, so ``test_state_upgrade.py`` can check
each one after a later version opens the dir.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from tests.conftest import FAKES, Daemon, make_env
from tests.tools.session_helpers import CALLS


def _session(d: Daemon, claude: Path, sid: str, calls: list[Any], hold: bool = False) -> Any:
    env = {**d.env, "CLAUDE_CODE_SESSION_ID": sid}
    argv = [str(claude), "--", sys.executable, str(CALLS), str(d.socket)]
    argv += ["--hold"] if hold else []
    proc = subprocess.Popen([*argv, json.dumps(calls)], env=env, stdout=subprocess.PIPE)
    assert proc.stdout is not None
    results = json.loads(proc.stdout.readline())
    bad = [r for r in results if r.get("isError")]
    if bad:
        proc.kill()
        raise AssertionError(bad)
    if not hold:
        proc.wait(30)
    return proc, [r["structuredContent"] for r in results]


def _git(cwd: Path, *args: str) -> None:
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", *ident, "-C", str(cwd), *args], check=True, capture_output=True)


def main(out: Path) -> int:
    import agentcoord

    version = getattr(agentcoord, "__version__", "0.1.0")
    with tempfile.TemporaryDirectory(
        prefix="acfx-", dir=os.environ.get("FIXTURE_TMP", "/var/tmp")
    ) as tmp:
        root = Path(tmp)
        claude = root / "bin" / "claude"
        claude.parent.mkdir()
        claude.write_text(f"#!{sys.executable}\n" + (FAKES / "claude_standin.py").read_text())
        claude.chmod(0o755)
        runner = root / "rbin" / "claude"
        runner.parent.mkdir()
        runner.write_text(f"#!{sys.executable}\n" + (FAKES / "claude_runner.py").read_text())
        runner.chmod(0o755)
        hub = root / "agentihub"
        (hub / "agents").mkdir(parents=True)
        d = Daemon(
            root,
            make_env(
                root,
                AGENTIBRIDGE_LOCAL_AGENTS_ENABLED="true",
                AGENTIHUB_DIR=str(hub),
                AGENTCOORD_RUNNER_COMMAND=f"{runner} -p --output-format json",
                HOME=str(root / "home"),
            ),
        )
        (root / "home").mkdir()
        d.start()
        from tests.agentops.conftest import make_profiles, ok, wait_for
        from tests.localagents.conftest import unix_call

        alice_sid, bob_sid = str(uuid.uuid4()), str(uuid.uuid4())
        _, (bob,) = _session(d, claude, bob_sid, [("whoami", {})])
        holder, res = _session(
            d,
            claude,
            alice_sid,
            [
                ("whoami", {}),
                ("claim", {"resource_key": "fixture/held", "ttl": "2h"}),
                ("claim", {"resource_key": "fixture/released", "ttl": "1h"}),
                ("release", {"resource_key": "fixture/released", "token": 2}),
                ("annotate", {"intent": "fixture focus", "files": ["a.py"]}),
                ("send", {"to": bob["agent"], "text": "queued for bob"}),
                (
                    "open_channel",
                    {"name": "fixture-chan", "participants": [bob["agent"]], "topic": "t"},
                ),
                ("send", {"channel": "fixture-chan", "text": "channel history"}),
                ("escalate", {"question": "fixture prompt?", "timeout_secs": 1}),
            ],
            hold=True,
        )
        alice, held = res[0], res[1]
        assert res[5]["delivery"] == "queued", res[5]
        call = lambda name, args: unix_call(d, name, args)  # noqa: E731
        make_profiles(d, "coder")
        repo = root / "repo"
        repo.mkdir()
        _git(repo, "init", "-q")
        (repo / "f.txt").write_text("base\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "base")
        ok(call, "spawn_subagent", name="dev", profile="coder", prompt="answer ok", repo=str(repo))
        from tests.agentops.conftest import stored

        wait_for(lambda: (stored(d, "agents", "dev") or {}).get("status", {}).get("phase"))
        wait_for(
            lambda: (stored(d, "agents", "dev") or {}).get("status", {}).get("phase") == "Succeeded"
        )
        work = Path(stored(d, "agents", "dev")["spec"]["cwd"])  # type: ignore[index]
        (work / "f.txt").write_text("work in progress\n")
        cp = ok(call, "checkpoint", name="dev", summary="fixture checkpoint")
        prompts = ok(call, "list_prompts")
        assert d.stop() == 0
        holder.kill()
        holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()
        meta = {
            "version": version,
            "made": time.time(),
            "alice": {"session_id": alice_sid, "agent": alice["agent"]},
            "bob": {"session_id": bob_sid, "agent": bob["agent"]},
            "held": {"key": "fixture/held", "token": held["token"]},
            "released": "fixture/released",
            "queued_text": "queued for bob",
            "channel": "fixture-chan",
            "prompt_question": "fixture prompt?",
            "prompt_ids": [p["id"] for p in prompts["prompts"]],
            "checkpoint": {"task": cp["task"], "ref": cp["ref"]},
            "profile": "coder",
            "agent": "dev",
        }
        (d.state_dir / "fixture.json").write_text(json.dumps(meta, indent=1) + "\n")
        with tarfile.open(out, "w:gz") as tar:
            tar.add(d.state_dir, arcname="state")
    print(out, out.stat().st_size)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]).resolve()))
