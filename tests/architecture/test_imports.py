"""The import direction of docs/architecture.md "Layers", read from the source: every import
counts, at module level, inside functions and under ``TYPE_CHECKING``."""

from __future__ import annotations

import pytest

from tests.architecture._graph import cycles, graph

pytestmark = pytest.mark.unit

# The entry points start the daemon; they sit above it.
_ENTRY_POINTS = ("agentcoord.cli", "agentcoord.__main__")

# docs/architecture.md "Layers": each top-level package's rank. A module imports only modules of
# its own rank or below; within a rank, packages import each other without a cycle.
RANKS = {
    "kernel": 0,  # pure helpers, settings, the wire format; the error tree
    "errors": 0,
    "proto": 0,
    "stores": 1,  # NATS KV and streams, the object store
    "leases": 2,  # services
    "messaging": 2,
    "agentops": 2,
    "localagents": 2,
    "identity": 2,
    "text": 2,
    "approvals": 2,
    "activity": 2,
    "budgets": 2,
    "tools": 3,  # adapters: MCP tools, listeners, Claude Code and git, the console, clients
    "mcp": 3,
    "claude": 3,
    "codex": 3,
    "gemini": 3,
    "opencode": 3,
    "gitguard": 3,
    "console": 3,
    "client": 3,
    "daemon": 4,  # the composition root
    "cli": 5,  # entry points
    "__main__": 5,
}


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_nothing_imports_the_daemon_package() -> None:
    """Only daemon/ itself and the entry points import agentcoord.daemon (the composition root)."""
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        if not _in(m, "agentcoord.daemon") and not m.startswith(_ENTRY_POINTS)
        for t in targets
        if _in(t, "agentcoord.daemon")
    )
    assert bad == []


def test_the_kernel_imports_only_itself_and_the_errors() -> None:
    """agentcoord.kernel sits below every other part: it imports only agentcoord.errors."""
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        if _in(m, "agentcoord.kernel")
        for t in targets
        if not (_in(t, "agentcoord.kernel") or t in {"agentcoord.errors", "agentcoord"})
    )
    assert bad == []


def test_tool_modules_do_not_import_each_other() -> None:
    """A tool module imports only the shared tool machinery (tools/_*.py, tools/base.py,
    tools/arguments.py), never another family."""
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        if _in(m, "agentcoord.tools")
        for t in targets
        if _in(t, "agentcoord.tools")
        and t != "agentcoord.tools"
        and not t.rpartition(".")[2].startswith("_")
        and t
        not in {"agentcoord.tools.registry", "agentcoord.tools.base", "agentcoord.tools.arguments"}
    )
    assert bad == []


def test_the_console_and_the_services_do_not_import_tools() -> None:
    """Tools are adapters over the services: no service, store or console module imports one."""
    below = ("agentcoord.stores", "agentcoord.messaging", "agentcoord.localagents")
    above_ok = ("agentcoord.tools", "agentcoord.daemon", *_ENTRY_POINTS)
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        if (m.startswith(below) or _in(m, "agentcoord.console") or _in(m, "agentcoord.agentops"))
        and not m.startswith(above_ok)
        for t in targets
        if _in(t, "agentcoord.tools")
    )
    assert bad == []


def test_no_import_cycles() -> None:
    """The module graph has no cycle, type-only and function-level imports included."""
    assert cycles(graph()) == []


def test_the_leases_service_imports_no_adapter() -> None:
    """agentcoord.leases is a service: it imports nothing from daemon/, tools/, console/ or the
    CLI (its adapters import it)."""
    above = ("agentcoord.daemon", "agentcoord.tools", "agentcoord.console", "agentcoord.cli.main")
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        if _in(m, "agentcoord.leases")
        for t in targets
        if any(_in(t, p) for p in above)
    )
    assert bad == []


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "kernel"  # the root package's __init__ is the base


def test_every_package_has_a_rank() -> None:
    """Each top-level package of agentcoord is placed in the rank order (a new one must be)."""
    unranked = sorted({_package(m) for m in graph()} - set(RANKS))
    assert unranked == []


def test_no_module_imports_a_higher_rank() -> None:
    """kernel < stores < services < adapters < daemon < entry points: no import goes upward."""
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        for t in targets
        if RANKS.get(_package(t), 0) > RANKS.get(_package(m), 0)
    )
    assert bad == []


def _owner_of_private(module: str) -> str | None:
    """The package a private module (a ``_name`` part) belongs to, or None for a public one."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def test_no_package_imports_another_packages_private_module() -> None:
    """A ``_name`` module is imported only from inside the package that holds it."""
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        for t in targets
        if (owner := _owner_of_private(t)) is not None and not _in(m, owner)
    )
    assert bad == []


def test_the_rank_check_sees_an_upward_import() -> None:
    """The rank check is not vacuous: the graph holds imports across ranks, all downward."""
    downward = [
        (m, t)
        for m, targets in graph().items()
        for t in targets
        if RANKS.get(_package(t), 0) < RANKS.get(_package(m), 0)
    ]
    assert len(downward) > 100


def test_no_two_modules_share_a_file_name() -> None:
    """A module's file name says what it does, once in the tree: no two modules (private
    ``_name`` ones counted without the underscore, packages' ``__init__`` aside) share one."""
    from collections import Counter

    from tests.architecture._graph import source_files

    names = Counter(p.name.lstrip("_") for p in source_files() if p.name != "__init__.py")
    assert sorted(n for n, count in names.items() if count > 1) == []
