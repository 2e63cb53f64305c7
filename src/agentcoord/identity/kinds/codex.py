"""OpenAI's Codex CLI as a session kind (docs/codex.md).

- **Recognised** by the native ``codex`` process (the npm package's ``codex`` node script
  starts it from ``@openai/codex-linux-*/vendor``; the node process is not the session). It is
  the direct parent of the MCP servers it starts.
- **Refused** under ``codex app-server``: that process may serve several sessions at once and
  outlive them, so its MCP servers cannot be told apart by their process; the caller is refused
  with one line naming the cause and the fix: ``agentcoord setup codex``, which turns the
  shared daemon off in config.toml, or ``--disable daemon_auto_start``.
- **Session id**: ``CODEX_THREAD_ID`` (or ``CODEX_SESSION_ID``) when the caller's environment
  has it. Codex gives its MCP servers only HOME, PATH, LANG, USER, LOGNAME, SHELL, TERM and
  TMPDIR (plus what the server's ``env_vars`` lists), so the shim usually has none; the session
  is then the process alone.
- **cwd**: ``-C``/``--cd DIR`` on its command line (relative to where it started), else its
  own working directory.
- **Markers**: ``CODEX_THREAD_ID`` and ``CODEX_SESSION_ID``, set for the commands it runs.
- **Name**: the basename of its cwd.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from agentcoord.identity.kinds.processkind import ProcessSessionKind
from agentcoord.identity.procinfo import ProcInfo

if TYPE_CHECKING:
    from agentcoord.identity.kinds.protocol import SessionKind

__all__ = ["SHARED_APP_SERVER", "Codex"]

_SESSION_ENV = ("CODEX_THREAD_ID", "CODEX_SESSION_ID")
# Options of the top-level ``codex`` command that take a value (``codex --help``), so the
# first other word is its subcommand.
_VALUED = frozenset(
    {"-c", "--config", "-i", "--image", "-m", "--model", "-p", "--profile", "-s", "--sandbox",
     "-a", "--ask-for-approval", "-C", "--cd", "--add-dir", "--enable", "--disable",
     "--local-provider", "--remote"}
)  # fmt: skip

SHARED_APP_SERVER = (
    "this MCP server runs under Codex's shared app-server (pid {pid}), which serves "
    "several Codex sessions at once, so the daemon cannot tell which session is calling; fix: "
    "run `agentcoord setup codex` (it sets `[features] daemon_auto_start = false` in Codex's "
    "config.toml) or start codex with `--disable daemon_auto_start`, then restart codex "
    "(docs/codex.md)"
)


def _is_codex(proc: ProcInfo) -> bool:
    return proc.name == "codex" or os.path.basename(proc.argv0) == "codex"


def subcommand(args: tuple[str, ...]) -> str | None:
    """The subcommand of a ``codex`` command line (``exec``, ``app-server``), None for none.
    The words after the ``codex`` one count (an interpreter may come before it)."""
    start = next((i for i, w in enumerate(args) if os.path.basename(w) == "codex"), 0)
    skip = False
    for word in args[start + 1 :]:
        if skip:
            skip = False
        elif word in _VALUED:
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def _cd_option(args: tuple[str, ...]) -> str | None:
    """The last ``-C DIR``/``--cd DIR``/``--cd=DIR`` on the command line."""
    found = None
    for i, word in enumerate(args):
        if word in ("-C", "--cd") and i + 1 < len(args):
            found = args[i + 1]
        elif word.startswith("--cd="):
            found = word.removeprefix("--cd=")
    return found


@dataclass(frozen=True)
class Codex(ProcessSessionKind):
    """Codex CLI sessions (``codex``, ``codex exec``, ``codex resume``)."""

    name: ClassVar[str] = "codex"
    markers: ClassVar[tuple[str, ...]] = _SESSION_ENV

    def recognise(self, proc: ProcInfo) -> bool:
        """The native ``codex`` process, by name or argv[0] basename."""
        return _is_codex(proc)

    def refusal(self, session: ProcInfo) -> str | None:
        if subcommand(session.args) == "app-server":
            return SHARED_APP_SERVER.format(pid=session.pid)
        return None

    def session_id(self, peer: ProcInfo | None, session: ProcInfo) -> str | None:
        for source in (peer, session):
            if source is None:
                continue
            for var in _SESSION_ENV:
                if source.environ.get(var):
                    return source.environ[var]
        return None

    def cwd(self, session: ProcInfo) -> str | None:
        cd = _cd_option(session.args)
        if cd is None:
            return session.cwd
        if posixpath.isabs(cd):
            return posixpath.normpath(cd)
        return posixpath.normpath(posixpath.join(session.cwd, cd)) if session.cwd else None


if TYPE_CHECKING:

    def _satisfies_protocol() -> SessionKind:
        return Codex()
