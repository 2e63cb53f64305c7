"""send -> model request in a live Claude Code session, the three ways a message reaches one,
in one run, as ratios to a raw write on the session's own socket (docs/claude-code.md "The
native inbox").

    PYTHONPATH=src python bench/native.py [--n 10]

Needs the real Claude Code (the version tests/claude/CLAUDE_CODE_VERSION pins, at
``/opt/claude-code-<version>/bin/claude``, or ``$AGENTCOORD_BENCH_CLAUDE``) and tmux. One daemon
on temp dirs and three interactive sessions under tmux, offline against the scripted model API
stand-in (tests/claude/model_api.py), which answers every request at once. Each figure is one
message at a time, from the human's ``send`` (or the raw write) to the moment the stand-in gets
the model request that carries its text; each session is idle when a message is sent.

- raw: the bench writes a cross-session frame on the native session's socket itself;
- native: the human ``send``s to a plain ``claude`` session; the daemon writes the frame;
- channels: the session is ``agentcoord claude`` without a native inbox
  (``CLAUDE_CODE_HARBOR_KITE=0``), so the daemon pushes over its channel;
- next hook: a plain ``claude`` without a native inbox; the text waits for the next hook, and
  the bench submits a prompt (tmux send-keys) right after the send, as a user typing at once.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _common import human_token  # noqa: E402
from messaging import start_daemon  # noqa: E402

from agentcoord.claude.inbox.client import write_frames  # noqa: E402
from agentcoord.claude.inbox.frames import user_frame  # noqa: E402
from agentcoord.claude.inbox.sessionfiles import read_peer  # noqa: E402
from agentcoord.client.rpc import call_unix  # noqa: E402
from tests.claude.conftest import OFFLINE, VERSION  # noqa: E402
from tests.claude.model_api import ModelAPI, Request, Text  # noqa: E402
from tests.claude.test_channels import CONFIRM, Tmux, _seed  # noqa: E402

RAW, NATIVE, CHANNELS, HOOKS = "raw socket write", "native inbox", "channel push", "next hook"
WAIT = 60.0
SETTLE_S = 1.0  # after an answer, for the session's screen and status to go back to idle


def _claude_path() -> Path:
    return Path(
        os.environ.get("AGENTCOORD_BENCH_CLAUDE") or f"/opt/claude-code-{VERSION}/bin/claude"
    )


def missing() -> str | None:
    """Why this bench cannot run here (the real binary or tmux is missing), or None."""
    path = _claude_path()
    if not os.access(path, os.X_OK):
        return f"Claude Code {VERSION} is not installed at {path}"
    if shutil.which("tmux") is None:
        return "tmux is not installed"
    return None


def _claude() -> Path:
    why = missing()
    if why is not None:
        raise SystemExit(why)
    return _claude_path()


def _until(pred: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if value := pred():
            return value
        time.sleep(0.02)
    raise RuntimeError(f"timed out waiting for {what}")


def _carries(req: Request, marker: str) -> bool:
    return marker in json.dumps(req.body.get("messages", []))


def _arrival(api: ModelAPI, first: int, marker: str) -> float:
    """When the stand-in got a request (from index ``first`` on) carrying ``marker``."""
    with api.changed:
        got = api.changed.wait_for(
            lambda: any(_carries(r, marker) for r in api.requests[first:]), WAIT
        )
        now = time.perf_counter()
    if not got:
        raise RuntimeError(f"no model request carried {marker}")
    return now


class Bench:
    def __init__(self, root: Path, claude: Path, api: ModelAPI) -> None:
        self.root, self.claude, self.api = root, claude, api
        xdg = root / "xdg"
        xdg.mkdir(mode=0o700)
        self.daemon, env = start_daemon(root, {"XDG_RUNTIME_DIR": str(xdg)})
        self.sock = root / "run" / "agentcoord.sock"
        self.token = human_token(root / "state")
        self.config = Path(env["CLAUDE_CONFIG_DIR"])
        home = root / "claude-home"
        (home / "tmp").mkdir(parents=True, mode=0o700)
        self.env = {
            **env,
            "HOME": str(home),
            "CLAUDE_CODE_TMPDIR": str(home / "tmp"),
            **OFFLINE,
            "ANTHROPIC_BASE_URL": api.url,
            "TERM": "xterm-256color",
            "AGENTCOORD_CLAUDE": str(claude),
            "CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF": "1",
        }
        subprocess.run(
            [sys.executable, "-m", "agentcoord", "setup", "claude"],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        self.tmux = Tmux(root / "tmux.sock")

    def start(self, name: str, argv: list[str], **extra: str) -> Path:
        project = self.root / name
        project.mkdir()
        _seed(self.config, project, VERSION)
        env = {**self.env, **extra}
        command = "cd {} && exec env -i {} {}".format(
            shlex.quote(str(project)),
            " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()),
            " ".join(shlex.quote(a) for a in argv),
        )
        if self.tmux.run("list-sessions"):
            self.tmux.run("new-window", "-d", "-t", "s", "-n", name, command)
        else:
            self.tmux.run(
                "new-session", "-d", "-s", "s", "-n", name, "-x", "200", "-y", "50", command
            )
        return project

    def agent(self, stem: str) -> str:
        def found() -> str:
            listed = self.call("list_agents")
            names = [
                a["name"] for a in listed.get("agents", []) if a["name"].startswith(stem + "-")
            ]
            return names[0] if names else ""

        return str(_until(found, f"the {stem} session's agent"))

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        params = {"name": tool, "arguments": arguments}
        result = call_unix(self.sock, "tools/call", params, token=self.token)
        if result.get("isError"):
            raise RuntimeError(result["content"][0]["text"])
        return result["structuredContent"]  # type: ignore[no-any-return]

    def native_peer(self, project: Path) -> Any:
        def found() -> Any:
            for path in (self.config / "sessions").glob("*.json"):
                try:
                    data = json.loads(path.read_text())
                except (OSError, ValueError):
                    continue
                if data.get("cwd") == str(project):
                    return read_peer(self.config, int(data["pid"]))
            return None

        return _until(found, "the native session's record")

    def sample(self, send: Callable[[str], None]) -> float:
        marker = f"m-{uuid.uuid4().hex[:10]}"
        first = len(self.api.requests)
        t0 = time.perf_counter()
        send(marker)
        took = _arrival(self.api, first, marker) - t0
        time.sleep(SETTLE_S)
        return took

    def close(self) -> None:
        self.tmux.run("kill-server")
        self.daemon.terminate()
        self.daemon.wait(20)


def measure(n: int) -> dict[str, list[float]]:
    import asyncio

    claude = _claude()
    api = ModelAPI().start()
    api.script(*[lambda req: Text("ok")] * (20 * n + 100))
    with tempfile.TemporaryDirectory(prefix="agentcoord-bench-native-") as tmp:
        bench = Bench(Path(tmp), claude, api)
        try:
            plain = [str(claude), "--permission-mode", "default"]
            launcher = [
                sys.executable,
                "-m",
                "agentcoord",
                "claude",
                "--permission-mode",
                "default",
            ]
            native_dir = bench.start("nat", plain)
            bench.start("chan", launcher, CLAUDE_CODE_HARBOR_KITE="0")
            _until(
                lambda: CONFIRM in bench.tmux.run("capture-pane", "-p", "-t", "s:chan"),
                "the dialog",
            )
            bench.tmux.run("send-keys", "-t", "s:chan", "Enter")
            bench.start("hook", plain, CLAUDE_CODE_HARBOR_KITE="0")
            agents = {k: bench.agent(k) for k in ("nat", "chan", "hook")}
            peer = bench.native_peer(native_dir)

            def raw(marker: str) -> None:
                frame = user_frame(
                    marker, sender="uds:/nonexistent", sender_name="bench", msg_id=str(uuid.uuid4())
                )
                asyncio.run(write_frames(peer, [frame]))

            def send(stem: str) -> Callable[[str], None]:
                def way(marker: str) -> None:
                    bench.call("send", to=agents[stem], text=marker)

                return way

            def hook(marker: str) -> None:
                bench.call("send", to=agents["hook"], text=marker)
                bench.tmux.run("send-keys", "-t", "s:hook", "go on", "Enter")

            ways = {RAW: raw, NATIVE: send("nat"), CHANNELS: send("chan"), HOOKS: hook}
            out: dict[str, list[float]] = {k: [] for k in ways}
            for way in ways.values():
                bench.sample(way)  # warm up (the native pump attaches within a scan)
            for _ in range(n):
                for name, way in ways.items():
                    out[name].append(bench.sample(way))
            return out
        finally:
            bench.close()
            api.stop()


def report(ctx: Any) -> Any:
    """bench/run's area (bench/_areas.py): each way's p50 against the raw write's, or every
    row empty with the reason when the real binary or tmux is missing (the run says so)."""
    from _areas import Area
    from _common import Figure

    ways = (NATIVE, CHANNELS, HOOKS)
    base = f"{RAW}, p50"
    why = missing()
    if why is not None:
        print(f"(native skipped: {why})", end=" ", flush=True)
        rows = [
            Figure(f"send -> model request, {w}, p50", None, base, None, "ms", note=why)
            for w in ways
        ]
        return Area("Native inbox", rows, notes=[f"Skipped: {why}."])
    got = measure(ctx.size(3, 10))
    raw = statistics.median(got[RAW]) * 1e3
    rows = [
        Figure(f"send -> model request, {w}, p50", statistics.median(got[w]) * 1e3, base, raw, "ms")
        for w in ways
    ]
    notes = [
        "One message at a time to an idle interactive session of the real Claude Code under "
        "tmux, offline against the scripted model stand-in; the time ends when the stand-in "
        "gets the model request carrying the text. The raw baseline is the bench writing the "
        "same frame on the session's socket itself; the next hook's user submits a prompt "
        "right after the send. All four are dominated by Claude Code's own start of a turn."
    ]
    return Area("Native inbox", rows, latency=got, notes=notes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10)
    args = parser.parse_args()
    got = measure(args.n)
    raw = statistics.median(got[RAW])
    print(f"{'way':<18} {'p50 ms':>9} {'max ms':>9} {'x raw':>7}")
    for name, samples in got.items():
        p50 = statistics.median(samples)
        print(f"{name:<18} {p50 * 1000:9.1f} {max(samples) * 1000:9.1f} {p50 / raw:7.2f}")


if __name__ == "__main__":
    main()
