"""The git commands a shell command line runs, and where (docs/claims.md "Working-tree guard").

A session's Bash tool runs a command line, not one program: ``cd ../app && git checkout main``,
``(cd a; git stash) || true``, ``git -C ../app reset --hard``, ``bash -c 'git pull'``,
``echo $(git stash)``. The line is parsed with a real shell parser (bashlex, a port of bash's
own grammar) and walked: each simple command that runs ``git`` is a :class:`GitCall` with the
directory it runs in, after every ``cd`` before it in the same shell (a subshell's or a pipe's
``cd`` stays in it), ``git -C``, ``--work-tree`` and ``GIT_WORK_TREE``. A directory that
cannot be known without running the line (``cd "$X"``) is None. Here-document bodies are left
out first (data, and bashlex cannot read ``<<'EOF'``). A line bashlex cannot parse, or one over
16 KiB, is split by :mod:`shlex` into commands at the shell's operators instead. Pure: text in,
calls out.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["GitCall", "git_calls"]

# Programs that run the command that follows them (their own options first).
_WRAPPERS = {"command", "exec", "nohup", "time", "nice", "sudo", "env", "builtin", "stdbuf"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh"}
# git's global options that take a value as the next word (git(1) "OPTIONS").
_GIT_VALUE_OPTS = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"}
_MAX_DEPTH = 4  # nested ``bash -c`` lines followed
_MAX_PARSED = 16 * 1024  # longer lines are split by shlex instead


@dataclass(frozen=True)
class GitCall:
    """One ``git`` run: the directory it runs in (None: not knowable from the text), the
    work tree it was pointed at (``--work-tree``, ``GIT_WORK_TREE``), its subcommand and the
    subcommand's arguments."""

    cwd: str | None
    work_tree: str | None
    sub: str
    args: tuple[str, ...]

    @property
    def text(self) -> str:
        """The call as people read it: ``git checkout main``."""
        return shlex.join(["git", self.sub, *self.args])


def _join(base: str | None, path: str) -> str | None:
    """``path`` from ``base``; None when either cannot be known (a variable, ``~user``)."""
    if not path or "$" in path or "`" in path or path.startswith("~"):
        return None
    if os.path.isabs(path):
        return os.path.normpath(path)
    return None if base is None else os.path.normpath(os.path.join(base, path))


def _git_call(argv: list[str], cwd: str | None, work_tree: str | None) -> GitCall | None:
    """``argv`` (``git`` first) as a :class:`GitCall`, its global options applied."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        opt = argv[i]
        name, eq, value = opt.partition("=")
        if name in _GIT_VALUE_OPTS and not eq:
            value = argv[i + 1] if i + 1 < len(argv) else ""
            i += 2
        elif opt.startswith("-C") and len(opt) > 2:
            name, value = "-C", opt[2:]
            i += 1
        else:
            i += 1
        if name == "-C" and value:
            cwd = _join(cwd, value)
        elif name == "--work-tree" and value:
            work_tree = _join(cwd, value)
    if i >= len(argv):
        return None
    return GitCall(cwd, work_tree, argv[i], tuple(argv[i + 1 :]))


def _unwrap(argv: list[str]) -> list[str]:
    """The command a wrapper runs (``env X=1 sudo -u me git ...`` -> ``git ...``): the first
    word after the wrappers that names git, a shell or ``cd`` (a wrapper's own options and
    values come before it)."""
    if not argv or os.path.basename(argv[0]) not in _WRAPPERS:
        return argv
    for k, word in enumerate(argv):
        if os.path.basename(word) in ("git", "cd", "pushd", *_SHELLS):
            return argv[k:]
    return []


class _Walk:
    """A walk over one parsed line, carrying the shell's current directory."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.calls: list[GitCall] = []

    def command(self, argv: list[str], assigned: dict[str, str], where: list[str | None]) -> None:
        argv = _unwrap(argv)
        if not argv:
            return
        prog = os.path.basename(argv[0])
        if prog in ("cd", "pushd"):
            rest = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
            target = rest[0] if rest else ""
            where[0] = _join(where[0], target) if target and target != "-" else None
        elif prog in _SHELLS and "-c" in argv[1:-1] and self.depth < _MAX_DEPTH:
            inner = argv[argv.index("-c", 1) + 1]
            self.calls += _calls(inner, where[0], self.depth + 1)
        elif prog == "git":
            tree = assigned.get("GIT_WORK_TREE")
            call = _git_call(argv, where[0], _join(where[0], tree) if tree else None)
            if call is not None:
                self.calls.append(call)

    def node(self, node: Any, where: list[str | None]) -> None:
        kind = node.kind
        if kind == "list":
            for part in node.parts:
                self.node(part, where)  # one shell: a cd carries to the next command
        elif kind == "pipeline":
            for part in node.parts:
                self.node(part, [where[0]])  # each side of a pipe is a subshell
        elif kind == "compound":
            first = node.list[0] if node.list else None
            shared = first is not None and getattr(first, "word", "") == "{"
            inner = where if shared else [where[0]]
            for part in node.list:
                self.node(part, inner)
            for redirect in getattr(node, "redirects", []) or []:
                self.node(redirect, [where[0]])
        elif kind in ("if", "for", "while", "until", "function"):
            for part in node.parts:
                self.node(part, where)
        elif kind == "command":
            argv: list[str] = []
            assigned: dict[str, str] = {}
            for part in node.parts:
                for sub in _substitutions(part):
                    self.node(sub, [where[0]])
                if part.kind == "word":
                    argv.append(part.word)
                elif part.kind == "assignment" and not argv:
                    name, _, value = part.word.partition("=")
                    assigned[name] = value
            self.command(argv, assigned, where)
        elif kind in ("commandsubstitution", "processsubstitution"):
            self.node(node.command, [where[0]])
        else:
            for sub in _substitutions(node):
                self.node(sub, [where[0]])


def _substitutions(node: Any) -> Iterator[Any]:
    """The command and process substitutions inside a word, assignment or redirect."""
    if node.kind in ("commandsubstitution", "processsubstitution"):
        yield node
        return
    for attr in ("parts", "output"):
        value = getattr(node, attr, None)
        if isinstance(value, list):
            for part in value:
                yield from _substitutions(part)
        elif value is not None and hasattr(value, "kind"):
            yield from _substitutions(value)


_OPERATORS = {"&&", "||", ";", "|", "&", ";;", "|&", "(", ")", "{", "}", "\n"}


def _lexed(line: str, cwd: str | None, depth: int) -> list[GitCall]:
    """The fallback for a line bashlex cannot parse: shlex's words, split into commands at the
    shell's operators; a ``cd`` carries to the commands after it."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    walk, where = _Walk(depth), [cwd]
    argv: list[str] = []
    try:
        for word in [*lexer, ";"]:
            if word in _OPERATORS or set(word) <= set(";&|()"):
                assigned = {}
                while argv and "=" in argv[0] and not argv[0].startswith("="):
                    name, _, value = argv.pop(0).partition("=")
                    assigned[name] = value
                walk.command(argv, assigned, where)
                argv = []
            else:
                argv.append(word)
    except ValueError:  # an unclosed quote: what was read so far
        walk.command(argv, {}, where)
    return walk.calls


# A here-document operator: ``<<EOF``, ``<<-EOF``, ``<<'EOF'``, ``<< "EOF"`` (not ``<<<``).
_HEREDOC = re.compile(r"(?<!<)<<(-?)[ \t]*(['\"]?)([A-Za-z0-9_.\-]+)\2")


def without_heredocs(line: str) -> str:
    """``line`` with each here-document's body left out (and its operator): a body is data
    for the command, and bashlex does not read a quoted delimiter (``<<'EOF'``, how
    ``git commit -m "$(cat <<'EOF' ... EOF)"`` is written). A body whose delimiter line never
    comes leaves the line as it was."""
    if "<<" not in line:
        return line
    out: list[str] = []
    pending: list[tuple[str, bool]] = []  # (delimiter, tabs stripped)
    for text in line.split("\n"):
        if pending:
            delim, tabs = pending[0]
            if (text.lstrip("\t") if tabs else text) == delim:
                pending.pop(0)
            continue
        for m in _HEREDOC.finditer(text):
            pending.append((m.group(3), m.group(1) == "-"))
        out.append(_HEREDOC.sub("", text))
    return line if pending else "\n".join(out)


def _calls(line: str, cwd: str | None, depth: int) -> list[GitCall]:
    if "git" not in line:
        return []
    line = without_heredocs(line)
    if "git" not in line:
        return []
    if len(line) > _MAX_PARSED:
        return _lexed(line, cwd, depth)  # bashlex takes ~25 ms per KiB: a bound on the hook
    import bashlex  # parsing tables load on first use, not at the daemon's start

    try:
        trees = bashlex.parse(line)
    except Exception:  # bashlex raises its own errors, and sometimes others, on odd input
        return _lexed(line, cwd, depth)
    walk, where = _Walk(depth), [cwd]
    for tree in trees:
        walk.node(tree, where)
    return walk.calls


def git_calls(line: str, cwd: str | None) -> list[GitCall]:
    """Every ``git`` run in the shell command ``line`` started in ``cwd``, in order."""
    return _calls(line, cwd, 0)
