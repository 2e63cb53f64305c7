"""Who a caller is has one home, identity/ (docs/architecture.md "Session kinds"): the process
probe is the one module that reads a peer's credentials or finds the process behind a socket,
and a session kind is reached through its registry, so adding one touches only identity/kinds/
and its setup module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.architecture._graph import ROOT, graph, module_name, source_files

pytestmark = pytest.mark.unit

_PROBE = "agentcoord.identity.procprobe"
_KINDS = "agentcoord.identity.kinds"
# What only the probe touches: the peer credentials of a unix socket, the kernel's socket
# table (sock_diag over netlink, /proc/net/tcp) and other processes' descriptors.
_ATTRS = {"SO_PEERCRED", "SO_PEERPIDFD", "AF_NETLINK"}
_TEXTS = ("socket:[", "/proc/net/tcp", "/fd/")


def _probe_uses(path: Path) -> list[str]:
    """What in ``path`` reads a process's credentials, sockets or descriptors."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in _ATTRS:
            found.append(f"{node.attr} (line {node.lineno})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text in _ATTRS:  # getattr(socket, "SO_PEERPIDFD", ...)
                found.append(f"{text} (line {node.lineno})")
            found += [f"{t!r} (line {node.lineno})" for t in _TEXTS if t in text]
            if text.endswith("/fd"):  # os.listdir(f"/proc/{pid}/fd")
                found.append(f"'/fd' (line {node.lineno})")
    return found


def test_only_the_process_probe_reads_peers_and_their_sockets() -> None:
    """Outside identity/procprobe.py nothing reads SO_PEERCRED, the socket table or another
    process's descriptors: the TCP peer lookup has one implementation."""
    bad = {
        module_name(p): uses
        for p in source_files()
        if module_name(p) != _PROBE and (uses := _probe_uses(p))
    }
    assert bad == {}


def test_the_probe_rule_sees_the_probe() -> None:
    """The rule is not vacuous: the probe itself uses every one of those."""
    uses = " ".join(_probe_uses(ROOT / "identity" / "procprobe.py"))
    assert all(name in uses for name in (*_ATTRS, *_TEXTS))


def test_a_session_kind_is_reached_through_the_registry() -> None:
    """No module outside identity/kinds/ imports a kind's own module: the identity rules take
    the kinds from agentcoord.identity.kinds, so a new kind changes no caller."""
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        if not m.startswith(_KINDS)
        for t in targets
        if t.startswith(_KINDS + ".") and t != f"{_KINDS}.protocol"
    )
    assert bad == []
