"""Claude Code's permission-rule syntax, parsed and matched (pure; docs/approvals.md "Rules").

A rule is ``Tool`` or ``Tool(specifier)``, as in Claude Code's ``permissions.allow`` and
``permissions.deny`` (code.claude.com/docs/en/permissions):

- ``Bash(npm run build)`` is that command exactly; ``Bash(npm test:*)`` is every command
  starting ``npm test``; ``Bash(git * main)`` is a wildcard (``*`` is any text).
- ``Edit(src/**)`` and ``Read(./.env)``: gitignore-style paths. ``//x`` is absolute, ``~/x``
  under the home directory, ``/x`` under the rule's root (a settings file's project, a
  standing approval's repository), ``x`` or ``./x`` under the session's working directory;
  ``**`` is any number of directories, ``*`` and ``?`` stay within one. A pattern with no
  ``/`` matches the file's name at any depth. ``Edit`` covers every tool that writes files
  (Edit, Write, MultiEdit, NotebookEdit); ``Read`` the ones that read them (Read, Glob, Grep).
- ``WebFetch(domain:example.com)``: fetches from that host.
- ``mcp__server`` is every tool of that MCP server, ``mcp__server__tool`` one, and
  ``mcp__server__*`` every one again.
- A bare tool name is every use of that tool.

Allowing is strict and refusing is broad, so one check never widens what a person granted: a
shell command is allowed only when each of its parts (split at ``&&``, ``||``, ``;``, ``|``,
``&`` and newlines) matches, and never when it substitutes commands or redirects into files;
a deny rule forbids a command when any part matches. A specifier of a tool this module does
not know matches nothing when allowing, and everything of that tool when denying.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from agentcoord.errors import InvalidArguments

__all__ = ["Request", "Rule", "allows", "forbids", "parse_rule", "shell_parts"]

_RULE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\-]*\*?)(?:\((.*)\))?$", re.DOTALL)

# The file tools and the input field naming their file; what a path rule's tool covers.
_FILE_FIELD = {
    "Edit": "file_path",
    "Write": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
    "Read": "file_path",
    "Glob": "path",
    "Grep": "path",
}
_PATH_RULE_TOOLS = {
    "Edit": frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"}),
    "Read": frozenset({"Read", "Glob", "Grep"}),
}
# Shell text after which the command runs something the rule never named, or writes files.
_UNSAFE = ("`", "$(", "<(", ">(", ">", "<")
_SPLIT = re.compile(r"\|\||&&|[;&|\n]")


@dataclass(frozen=True)
class Rule:
    """One parsed rule: its tool and specifier (None: every use of the tool)."""

    tool: str
    specifier: str | None
    text: str


@dataclass(frozen=True)
class Request:
    """One tool call as a PermissionRequest hook gives it, with where it runs."""

    tool: str
    input: Mapping[str, Any]
    cwd: str | None = None
    home: str | None = None


def parse_rule(text: str) -> Rule:
    """``text`` as a :class:`Rule`; :class:`InvalidArguments` saying what is wrong."""
    raw = text.strip()
    match = _RULE.match(raw)
    if not raw or match is None:
        raise InvalidArguments(
            f"not a permission rule: {text!r} (write Tool or Tool(specifier), e.g. "
            "'Bash(npm test:*)', 'Edit(src/**)', 'mcp__server__tool')"
        )
    tool, spec = match.group(1), match.group(2)
    if tool.endswith("*") and not (tool.startswith("mcp__") and tool.endswith("__*")):
        raise InvalidArguments(f"{raw}: only an MCP server's tools take a *: mcp__server__*")
    if spec is not None:
        spec = spec.strip()
        if not spec or (spec in ("*", "**") and tool == "Bash"):
            raise InvalidArguments(
                f"{raw}: give a specifier or none (the bare tool name {tool!r} is every use)"
            )
        if tool.startswith("mcp__"):
            raise InvalidArguments(f"{raw}: MCP rules take no specifier (mcp__server__tool)")
        if tool == "WebFetch" and not spec.startswith("domain:"):
            raise InvalidArguments(f"{raw}: WebFetch rules name a host: WebFetch(domain:HOST)")
    if tool.startswith("mcp__") and len(tool) <= len("mcp__"):
        raise InvalidArguments(f"{raw}: name the MCP server: mcp__server or mcp__server__tool")
    return Rule(tool, spec, raw if spec is None else f"{tool}({spec})")


def allows(rule: Rule, request: Request, root: str | None) -> bool:
    """Whether ``rule`` allows ``request``, strictly (see the module doc)."""
    return _matches(rule, request, root, strict=True)


def forbids(rule: Rule, request: Request, root: str | None) -> bool:
    """Whether deny rule ``rule`` covers ``request``, broadly (see the module doc)."""
    return _matches(rule, request, root, strict=False)


def _matches(rule: Rule, request: Request, root: str | None, *, strict: bool) -> bool:
    if rule.tool.startswith("mcp__"):
        return _mcp_matches(rule.tool, request.tool)
    if rule.tool in _PATH_RULE_TOOLS:
        if request.tool not in _PATH_RULE_TOOLS[rule.tool]:
            return False
        if rule.specifier is None:
            return True
        return _path_matches(rule.specifier, request, root, strict=strict)
    if rule.tool != request.tool:
        return False
    if rule.specifier is None:
        return True
    if rule.tool == "Bash":
        command = request.input.get("command")
        if not isinstance(command, str):
            return not strict
        return _command_matches(rule.specifier, command, strict=strict)
    if rule.tool == "WebFetch":
        url = request.input.get("url")
        host = urlsplit(url).hostname if isinstance(url, str) else None
        if host is None:
            return not strict
        return host.lower() == rule.specifier.removeprefix("domain:").strip().lower()
    return not strict


def _mcp_matches(pattern: str, tool: str) -> bool:
    if pattern == tool:
        return True
    if pattern.endswith("__*"):
        return tool.startswith(pattern[:-1])
    # mcp__server is every tool of that server (its name has no "__" of its own).
    return pattern.count("__") == 1 and tool.startswith(pattern + "__")


def shell_parts(command: str) -> list[str]:
    """The simple commands of ``command``, split at its control operators (``2>&1`` is kept
    whole), stripped, empty ones dropped."""
    text = command.replace("2>&1", "\0")
    return [p.strip().replace("\0", "2>&1") for p in _SPLIT.split(text) if p.strip()]


def _command_matches(spec: str, command: str, *, strict: bool) -> bool:
    parts = shell_parts(command)
    if strict:
        if not parts:
            return False
        if any(u in command.replace("2>&1", "") for u in _UNSAFE):
            return False
        return all(_one_command(spec, part) for part in parts)
    return _one_command(spec, command.strip()) or any(_one_command(spec, p) for p in parts)


def _one_command(spec: str, command: str) -> bool:
    if spec.endswith(":*"):  # the prefix form: the command, or it followed by arguments
        prefix = spec[:-2].rstrip()
        return command == prefix or command.startswith(prefix + " ")
    if "*" not in spec:
        return command == spec
    pattern = ".*".join(re.escape(piece) for piece in spec.split("*"))
    # "ls *" also matches a bare "ls": the space before a trailing * is optional.
    if spec.endswith(" *"):
        pattern = pattern[: -len(r"\ .*")] + r"(?:\ .*)?"
    return re.fullmatch(pattern, command, re.DOTALL) is not None


def _path_matches(spec: str, request: Request, root: str | None, *, strict: bool) -> bool:
    field = _FILE_FIELD.get(request.tool, "file_path")
    value = request.input.get(field)
    if not isinstance(value, str) or not value:
        if request.tool in ("Glob", "Grep") and request.cwd:
            value = request.cwd  # they search the working directory when given no path
        else:
            return not strict
    target = _absolute(value, request.cwd)
    if target is None:
        return not strict
    anchored = _anchor(spec, request, root)
    if anchored is None:
        return not strict
    base, pattern = anchored
    if base is None:  # no slash in the pattern: the file's name, at any depth
        return fnmatch.fnmatchcase(posixpath.basename(target), pattern)
    rel = posixpath.relpath(target, base) if target != base else "."
    if rel == ".." or rel.startswith("../"):
        return False
    return _glob(pattern, rel)


def _absolute(path: str, cwd: str | None) -> str | None:
    if not os.path.isabs(path):
        if not cwd:
            return None
        path = posixpath.join(cwd, path)
    return posixpath.normpath(path)


def _anchor(spec: str, request: Request, root: str | None) -> tuple[str | None, str] | None:
    """(base directory or None for "any depth", the pattern below it)."""
    if spec.startswith("//"):
        return "/", spec[2:]
    if spec.startswith("~/"):
        return (request.home, spec[2:]) if request.home else None
    if spec.startswith("/"):
        base = root or request.cwd
        return (base, spec[1:]) if base else None
    pattern = spec[2:] if spec.startswith("./") else spec
    if "/" not in pattern.rstrip("/"):
        return None, pattern.rstrip("/")
    return (request.cwd, pattern) if request.cwd else None


def _glob(pattern: str, rel: str) -> bool:
    """gitignore-style: ``**`` any number of directories, ``*``/``?`` within one segment; a
    pattern ending in ``/`` or ``/**`` is everything below that directory."""
    pattern = pattern.rstrip("/") + ("/**" if pattern.endswith("/") else "")
    regex = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            regex += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            regex += ".*"
            i += 2
        elif pattern[i] == "*":
            regex += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            regex += "[^/]"
            i += 1
        else:
            regex += re.escape(pattern[i])
            i += 1
    return re.fullmatch(regex, rel, re.DOTALL) is not None
