"""The sandbox seam for runners: bubblewrap on Linux, else a weaker mode that says so.

bubblewrap (docs/localagents.md "The sandbox"): read-only root, private /dev, /proc and /tmp,
writable package dir and ``~/.claude``, every namespace unshared but the network, a new session,
die-with-parent, no capabilities. What the private /tmp would hide but the runner needs (its
executable, the interpreter, ``sys.prefix`` and site-packages, agentcoord's own import root) is
bound back read-only wherever it is installed; the daemon's secrets (state dir, runtime dir,
credential files) are masked, and only the unix socket is bound back.

In both modes the runner's rlimits and its death signal (PR_SET_PDEATHSIG, SIGKILL: it dies
with the daemon) are set before the runner's first instruction by :func:`exec_prefix`, small
programs that set them and exec the rest of the command line (docs/localagents.md "Lifetime and
rlimits"), never by Python code between fork and exec: the daemon runs threads.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentcoord.kernel.config import Config

from agentcoord.kernel.childexec import Limits, exec_prefix, rlimit_caps, util_linux

__all__ = [
    "CLAUDE_GUARDED",
    "Limits",
    "Sandbox",
    "bwrap_argv",
    "claude_guarded",
    "daemon_secrets",
    "detect_sandbox",
    "exec_prefix",
    "executable_roots",
    "python_roots",
    "rlimit_caps",
    "trial_run",
    "util_linux",
]

_PRIVATE = Path("/tmp")  # replaced by an empty tmpfs inside (``--tmpfs /tmp``)
WEAKER = (
    "none: bubblewrap not found; the runner ran with rlimits, a new session and "
    "die-with-parent only"
)


@dataclass(frozen=True)
class Sandbox:
    """Which isolation runners get; ``bwrap`` None means the weaker mode.

    ``hidden`` are the daemon's secrets (:func:`daemon_secrets`): masked inside the sandbox.
    """

    bwrap: str | None
    hidden: tuple[Path, ...] = ()

    @property
    def mode(self) -> str:
        return "bwrap" if self.bwrap else WEAKER

    def describe(self) -> dict[str, object]:
        """For ``doctor`` and results: what isolation is in force."""
        return {"sandbox": "bwrap" if self.bwrap else "none", "path": self.bwrap, "note": self.mode}

    def argv(
        self,
        command: Sequence[str],
        *,
        package: Path,
        env: Mapping[str, str],
        socket: Path | None = None,
        writable: Sequence[Path] = (),
        readable: Sequence[Path] = (),
        exceptions: Sequence[Path] = (),
        guarded: Sequence[Path] = (),
        network: bool = True,
    ) -> list[str]:
        """``command`` wrapped in bwrap with everything it needs to start from ``env``: the
        runner's executable and this interpreter's install bound back, the daemon's secrets
        masked, and ``socket`` (the daemon's unix socket) the one thing shown of the runtime
        dir. Without bwrap, ``command`` itself."""
        if not self.bwrap:
            return list(command)
        reach = [*python_roots(env), *executable_roots(command[0], env.get("PATH"))]
        return bwrap_argv(
            self.bwrap,
            command,
            package=package,
            reachable=reach,
            hidden=self.hidden,
            readable=readable,
            writable=writable,
            exceptions=[*([socket] if socket and socket.exists() else []), *exceptions],
            guarded=guarded,
            network=network,
        )


def detect_sandbox(choice: str = "auto", hidden: Iterable[Path] = ()) -> Sandbox:
    """``auto``: bubblewrap from PATH, else the weaker mode; ``none``: the weaker mode;
    anything else is the path of a bwrap binary. ``hidden`` is masked inside."""
    masked = tuple(hidden)
    if choice == "none":
        return Sandbox(None, masked)
    if choice in ("auto", ""):
        return Sandbox(shutil.which("bwrap"), masked)
    return Sandbox(choice if shutil.which(choice) else None, masked)


def daemon_secrets(cfg: Config) -> tuple[Path, ...]:
    """What no runner may read: the state dir (``human.token``, ``tokens.json``, the NATS
    users in ``nats/nats.conf``, the object API's CA and keys), the runtime dir (all but the
    socket, bound back per runner), the config file (it may hold a NATS password) and the
    credential files of an external NATS or API server
    (docs/security.md "What is enforced for sandboxed runners")."""
    paths = [cfg.state_dir, cfg.runtime_dir, cfg.config_file]
    paths += [cfg.nats_creds, cfg.nats_nkey_seed, cfg.nats_tls_key]
    # kubeconfigs: this daemon's (``agentcoord kubeconfig --write``, the owner's client key)
    # and a real API server's (``--store kubernetes``), wherever they were put.
    paths += [cfg.kubeconfig, *cfg.kube_credentials]
    return tuple(dict.fromkeys(p for p in paths if p is not None))


def python_roots(env: Mapping[str, str]) -> list[Path]:
    """What this interpreter needs to run ``python -m agentcoord`` (the runner's shim):
    the executable (and where its symlinks lead), ``sys.prefix``/``sys.base_prefix`` (a venv
    and the Python it was made from), site-packages, agentcoord's import root (an editable
    install's source dir) and every other import path but ``sys.path[0]`` (the daemon's cwd
    or script dir, which the runner never imports from), plus the runner's ``PYTHONPATH``."""
    import agentcoord

    exe = Path(sys.executable)
    paths = [exe, exe.resolve(), Path(agentcoord.__file__).resolve().parents[1]]
    paths += [Path(p) for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix)]
    paths += [Path(p) for p in site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        paths.append(Path(site.getusersitepackages()))
    paths += [Path(p) for p in sys.path[1:] if p]
    paths += [Path(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return _existing(paths)


def executable_roots(name: str, path: str | None) -> list[Path]:
    """The runner's executable as found on ``path``, where its symlinks lead (the directory:
    a native build keeps its files beside it) and a ``#!`` interpreter with its prefix (a
    script made by pip or a test's stand-in)."""
    found = shutil.which(name, path=path)
    if found is None:
        return []
    exe = Path(found).absolute()
    real = exe.resolve()
    paths = [exe, real.parent]
    interpreter = _shebang(real)
    if interpreter is not None:
        paths += [interpreter, interpreter.resolve()]
        if interpreter.parent.name == "bin":
            paths.append(interpreter.parent.parent)  # a venv or an npm/pipx prefix
    return _existing(paths)


def _shebang(path: Path) -> Path | None:
    try:
        with path.open("rb") as fh:
            head = fh.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    return Path(os.fsdecode(words[0])) if words and words[0].startswith(b"/") else None


def _existing(paths: Iterable[Path]) -> list[Path]:
    return list(dict.fromkeys(p for p in paths if p.is_absolute() and p.exists()))


def _within(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """``paths`` without the ones another of them contains (one bind covers both)."""
    unique = list(dict.fromkeys(paths))
    return [p for p in unique if not any(q != p and _within(p, q) for q in unique)]


# What in Claude Code's config dir acts on the user's own, unsandboxed sessions: hooks and
# permission rules (settings), MCP servers (.claude.json when CLAUDE_CONFIG_DIR moves it there),
# memory, subagents, commands, skills, plugins, output styles. A runner writes its transcripts
# and session files into that dir, never these: they are bound back read-only.
CLAUDE_GUARDED = (
    "settings.json",
    "settings.local.json",
    ".claude.json",
    "CLAUDE.md",
    "agents",
    "commands",
    "skills",
    "plugins",
    "hooks",
    "output-styles",
)


def claude_guarded(claude_dir: Path) -> list[Path]:
    """The entries of ``claude_dir`` a runner may read but not change (:data:`CLAUDE_GUARDED`),
    each made if absent so that it can be bound read-only: a runner must not create one
    either (a ``CLAUDE.md`` or a hook the user's next session would load). What is made is
    inert: empty dirs, an empty ``CLAUDE.md``, ``{}`` for the JSON files."""
    paths = [claude_dir / name for name in CLAUDE_GUARDED]
    for path in paths:
        if path.exists() or path.is_symlink():
            continue
        try:
            if path.suffix == ".json":
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as fh:
                    fh.write("{}\n")
            elif path.suffix == ".md":
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            else:
                path.mkdir(mode=0o700)
        except FileExistsError:
            pass
    return paths


def _masks(hidden: Iterable[Path]) -> list[str]:
    """An empty tmpfs over each hidden directory, ``/dev/null`` over each hidden file."""
    argv: list[str] = []
    for path in _outermost(p for p in hidden if p.exists()):
        if path.is_dir():
            argv += ["--perms", "0700", "--tmpfs", str(path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(path)]
    return argv


def bwrap_argv(
    bwrap: str,
    command: Sequence[str],
    *,
    package: Path,
    reachable: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    writable: Sequence[Path] = (),
    exceptions: Sequence[Path] = (),
    guarded: Sequence[Path] = (),
    network: bool = True,
) -> list[str]:
    """The bwrap command line. Later mounts override earlier ones, so the order is:

    1. the read-only root with a private ``/tmp``;
    2. ``reachable`` under ``/tmp`` bound back read-only (the interpreter and the runner's
       executable; elsewhere the read-only root already shows them);
    3. ``hidden`` masked: an empty tmpfs over a directory, ``/dev/null`` over a file, even
       where step 2 showed it (a venv in the same tmp dir as the state dir);
    4. ``readable`` and ``writable`` (``~/.claude``, the profile's paths), then the masks of
       step 3 again, so that no such path uncovers a secret;
    5. ``exceptions``, the daemon's own holes in the masks (its socket, the job's MCP
       config); ``guarded`` read-only again inside a writable dir (Claude Code's settings in
       ``~/.claude``); and last the package (a spawned agent's work dir).

    ``network=False`` (a profile's ``spec.network: false``) keeps the network namespace
    unshared: only loopback inside, and the daemon's unix socket still works (a bind mount).
    """
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in _outermost(p for p in reachable if _within(p, _PRIVATE) and p != _PRIVATE):
        argv += ["--ro-bind", str(path), str(path)]
    masks = _masks(hidden)
    argv += masks
    for path in dict.fromkeys(readable):
        argv += ["--ro-bind", str(path), str(path)]
    for path in dict.fromkeys(writable):
        argv += ["--bind", str(path), str(path)]
    # The masks again: a profile path that contains a secret (``writablePaths: [$HOME]``, an
    # MCP config file in the state dir) must not uncover it; then the daemon's own holes.
    argv += masks
    for path in dict.fromkeys(exceptions):
        argv += ["--ro-bind", str(path), str(path)]
    for path in dict.fromkeys(guarded):
        if path.exists():
            argv += ["--ro-bind", str(path), str(path)]
    argv += ["--bind", str(package), str(package)]
    argv += ["--unshare-all", *(["--share-net"] if network else [])]
    argv += [
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--chdir",
        str(package),
        "--",
        *command,
    ]
    return argv


# Run as a runner's shim would be (this interpreter, -m agentcoord): the import must work, and
# every hidden path must show nothing (an empty tmpfs, /dev/null).
_TRIAL = """\
import json, os, sys
import agentcoord
shown = [p for p in sys.argv[1:] if os.path.isdir(p) and os.listdir(p)
         or os.path.isfile(p) and os.path.getsize(p)]
print(json.dumps({"agentcoord": agentcoord.__file__, "shown": shown}))
"""


def trial_run(sandbox: Sandbox, env: Mapping[str, str], timeout: float = 30.0) -> tuple[bool, str]:
    """Start this interpreter inside ``sandbox`` as a runner's shim is started and import
    agentcoord, for ``doctor``: (worked, what happened). Also fails when a hidden path shows
    anything inside."""
    if not sandbox.bwrap:
        return True, sandbox.mode
    with tempfile.TemporaryDirectory(prefix="agentcoord-trial-") as package:
        command = [sys.executable, "-c", _TRIAL, *map(str, sandbox.hidden)]
        argv = sandbox.argv(command, package=Path(package), env=env)
        try:
            out = subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout, env=dict(env), check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"bwrap did not run: {exc}"
    if out.returncode != 0:
        lines = (out.stderr.strip() or f"exit {out.returncode}").splitlines()
        return False, f"{sys.executable} -m agentcoord fails inside: {lines[-1]}"
    try:
        seen = json.loads(out.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return False, f"unexpected output from the trial: {out.stdout[-200:]!r}"
    if seen["shown"]:
        return False, f"the sandbox shows the daemon's {', '.join(seen['shown'])}"
    return True, f"a runner imports {seen['agentcoord']}; state and runtime dirs hidden"
