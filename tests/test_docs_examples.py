"""Every shell example in README.md and docs/*.md runs, as written, against a real daemon.

A fenced block tagged ``sh``, ``bash`` or ``console`` is an example: in ``sh``/``bash`` every
line that is not blank or a comment is a command (``\\`` continues it); in ``console`` the
lines starting with ``$ `` are, and the rest is the output shown. Each command is one test,
named ``file:line``, and fails when the command exits non-zero. HTML comments right before a
block (invisible when rendered) say what a test cannot do, each with its reason:

- ``<!-- not-run: REASON -->``: no command of the block runs;
- ``<!-- not-run "PREFIX": REASON -->``: commands starting with PREFIX do not run;
- ``<!-- exits N "PREFIX": REASON -->``: commands starting with PREFIX must exit N;
- ``<!-- needs CMD "PREFIX": REASON -->``: commands starting with PREFIX need the system
  command CMD (the doc's "Needs ..." line names its package): where CMD is not on PATH they are
  skipped as a missing dependency (``tests/_skips.py``), not failed;
- ``<!-- file NAME -->``: the block (any language) is saved as NAME in the working dir.

Each doc file gets one daemon (on temp dirs, as ``tests/conftest.py`` makes them) and one
shell state: the commands of a file run in order in a scratch working dir, and what one
``export``s or ``cd``s into, the next one sees, as in a terminal. ``agentcoord`` is this
checkout's (``python -m agentcoord``), ``.venv/bin/X`` is the running interpreter's ``X``,
``kubectl`` talks to the daemon's own object API (``KUBECONFIG`` is set, as docs/store.md's
first line does), and HOME is a private temp dir.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests._skips import SYSTEM_COMMANDS
from tests.conftest import FAKES, Daemon, make_env

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_TAGS = {"sh", "bash", "console"}
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w-]*)\s*$")
MARKER = re.compile(
    r"<!--\s*(?:(?P<kind>not-run|exits\s+(?P<code>\d+)|needs\s+(?P<needs>[\w.-]+))"
    r"(?:\s+\"(?P<prefix>[^\"]+)\")?\s*:"
    r"\s*(?P<reason>.*?)|file\s+(?P<file>\S+))\s*-->"
)
COMMAND_TIMEOUT = 120.0
# What each doc's examples assume about the machine beyond a fresh daemon (the doc says so).
DAEMON_ENV = {
    # "with MCP_MERIDIAN_MCP_URL set for the daemon"
    "docs/profiles.md": {"MCP_MERIDIAN_MCP_URL": "http://127.0.0.1:8811/mcp"},
}
# The quick start follows "Needs ... Claude Code": doctor checks for a `claude` on PATH.
WITH_CLAUDE = {"README.md"}


@dataclass
class Command:
    doc: str  # path relative to the checkout
    line: int
    text: str
    expect: int = 0
    needs: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


@dataclass
class Marker:
    doc: str
    line: int
    kind: str  # not-run | exits | needs | file
    prefix: str | None
    reason: str
    code: int = 0
    used: bool = False
    needs: str = ""


@dataclass
class Doc:
    commands: list[Command] = field(default_factory=list)
    skipped: list[tuple[Command, Marker]] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)


def _commands_of(tag: str, lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, raw in lines:
        line = raw.rstrip()
        if pending is None:
            if tag == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            elif not line.strip() or line.lstrip().startswith("#"):
                continue
            pending = (number, "")
        start, text = pending
        if line.endswith("\\"):
            pending = (start, text + line[:-1] + " ")
            continue
        out.append((start, text + line))
        pending = None
    return out


def parse(path: Path) -> Doc:
    """The examples, markers and saved files of one Markdown file."""
    doc_name = str(path.relative_to(ROOT))
    doc = Doc()
    lines = path.read_text().splitlines()
    waiting: list[Marker] = []  # markers since the last block
    i = 0
    while i < len(lines):
        line = lines[i]
        for m in MARKER.finditer(line):
            kind = "file" if m.group("file") else m.group("kind").split()[0]
            marker = Marker(
                doc_name,
                i + 1,
                kind,
                m.group("prefix"),
                m.group("file") or (m.group("reason") or "").strip(),
                int(m.group("code") or 0),
                needs=m.group("needs") or "",
            )
            waiting.append(marker)
            doc.markers.append(marker)
        fence = FENCE.match(line)
        if not fence:
            if line.strip() and not MARKER.search(line):
                waiting = []  # a marker binds to the block right after it (blank lines aside)
            i += 1
            continue
        indent, ticks, tag = fence.groups()
        body: list[tuple[int, str]] = []
        i += 1
        while i < len(lines) and lines[i].strip() != ticks:
            body.append((i + 1, lines[i][len(indent) :]))
            i += 1
        i += 1
        for marker in waiting:
            if marker.kind == "file":
                doc.files[marker.reason] = "".join(text + "\n" for _, text in body)
                marker.used = True
        if tag in SHELL_TAGS:
            for number, text in _commands_of(tag, body):
                command = Command(doc_name, number, text)
                skip = None
                for marker in waiting:
                    applies = marker.prefix is None or text.startswith(marker.prefix)
                    if marker.kind == "file" or not applies:
                        continue
                    marker.used = True
                    if marker.kind == "not-run":
                        skip = marker
                    elif marker.kind == "needs":
                        command.needs.append(marker.needs)
                    else:
                        command.expect = marker.code
                if skip is not None:
                    doc.skipped.append((command, skip))
                else:
                    doc.commands.append(command)
        waiting = []
    return doc


PARSED = {str(p.relative_to(ROOT)): parse(p) for p in DOCS}
COMMANDS = [c for d in PARSED.values() for c in d.commands]
MARKERS = [m for d in PARSED.values() for m in d.markers]


class DocShell:
    """One doc file's daemon and terminal state; runs its commands in the doc's order."""

    def __init__(self, doc: str, root: Path) -> None:
        self.doc = doc
        self.root = root
        self.work = root / "work"
        self.work.mkdir()
        home = root / "home"
        home.mkdir()
        for name, text in PARSED[doc].files.items():
            (self.work / name).write_text(text)
        bin_dir = root / "bin"
        bin_dir.mkdir()
        wrapper = bin_dir / "agentcoord"
        wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} -m agentcoord "$@"\n')
        wrapper.chmod(0o755)
        if doc in WITH_CLAUDE:
            claude = bin_dir / "claude"
            claude.write_text(f"#!{sys.executable}\n" + (FAKES / "claude_standin.py").read_text())
            claude.chmod(0o755)
        path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]])
        # The daemon and the reader's shell share PATH (the daemon resolves backends on it),
        # HOME and Claude Code's config dir.
        env = make_env(root, PATH=path, HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"))
        self.daemon = Daemon(root, {**env, **DAEMON_ENV.get(doc, {})})
        self.daemon.start()
        kubeconfig = root / "kubeconfig"
        kubeconfig.write_text(
            subprocess.run(
                ["agentcoord", "kubeconfig"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            ).stdout
        )
        env["KUBECONFIG"] = str(kubeconfig)
        self.env = env
        self.cwd = self.work
        self.done: dict[int, subprocess.CompletedProcess[str]] = {}

    def run(self, command: Command) -> subprocess.CompletedProcess[str]:
        """Run ``command``, after every earlier command of this doc (each at most once)."""
        for earlier in PARSED[self.doc].commands:
            if earlier.line not in self.done:
                self.done[earlier.line] = self._run(earlier)
            if earlier.line == command.line:
                break
        return self.done[command.line]

    def _run(self, command: Command) -> subprocess.CompletedProcess[str]:
        text = command.text.replace(".venv/bin/agentcoord", "agentcoord")
        text = text.replace(".venv/bin/", f"{Path(sys.executable).parent}/")
        env_file, cwd_file = self.root / "env.after", self.root / "cwd.after"
        script = (
            f"set -o pipefail\n{text}\n__rc=$?\nenv -0 > {env_file}; pwd > {cwd_file}\nexit $__rc\n"
        )
        try:
            done = subprocess.run(
                ["bash", "-c", script],
                env=self.env,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
            )
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(
                exc.cmd, -1, str(exc.stdout or ""), f"timed out after {COMMAND_TIMEOUT} s"
            )
        if env_file.exists():
            pairs = env_file.read_bytes().split(b"\0")
            self.env = dict(
                p.decode().split("=", 1)
                for p in pairs
                if b"=" in p and not p.startswith((b"_=", b"SHLVL=", b"PWD=", b"OLDPWD="))
            )
            self.cwd = Path(cwd_file.read_text().strip())
        return done

    def close(self) -> None:
        self.daemon.stop()


@pytest.fixture(scope="module")
def shells(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, DocShell]]:
    """One DocShell per doc file, started on first use; the previous doc's daemon stops then
    (the tests run file by file), so one daemon runs at a time."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed (.ci/run installs it)")

    class Shells(dict[str, DocShell]):
        def __missing__(self, doc: str) -> DocShell:
            for other in list(self):
                self.pop(other).close()
            shell = DocShell(doc, tmp_path_factory.mktemp(Path(doc).stem))
            self[doc] = shell
            return shell

    shells_ = Shells()
    yield shells_
    for shell in shells_.values():
        shell.close()


@pytest.mark.parametrize("command", COMMANDS, ids=[c.id for c in COMMANDS])
def test_doc_command_runs(shells: dict[str, DocShell], command: Command) -> None:
    """The command, as the doc writes it, exits as the doc says (0 unless marked)."""
    for name in command.needs:
        if shutil.which(name) is None:
            package = SYSTEM_COMMANDS.get(name, name)
            pytest.skip(f"{package} not installed ({name} is not on PATH): {command.id} needs it")
    done = shells[command.doc].run(command)
    assert done.returncode == command.expect, (
        f"{command.id}: `{command.text}` exited {done.returncode}, expected {command.expect}\n"
        f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )


def test_examples_are_found() -> None:
    """The scan finds the docs' examples (the README's setup, docs/store.md's kubectl), so an
    empty scan cannot pass."""
    texts = [c.text for c in COMMANDS]
    assert any(t.startswith(".venv/bin/agentcoord doctor") for t in texts)
    assert any(t.startswith("kubectl get agents") for t in texts)


@pytest.mark.parametrize("marker", MARKERS, ids=[f"{m.doc}:{m.line}" for m in MARKERS])
def test_marker_applies_and_says_why(marker: Marker) -> None:
    """Every doc-test marker binds to a block (a PREFIX to one of its commands) and each
    not-run or exit marker gives its reason."""
    assert marker.used, f"{marker.doc}:{marker.line}: the marker matches no block or command"
    if marker.kind != "file":
        assert len(marker.reason.split()) >= 3, f"{marker.doc}:{marker.line}: say why"
