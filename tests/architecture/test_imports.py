"""The import direction of docs/architecture.md "Layers", read from the source: every import
counts, at module level, inside functions and under ``TYPE_CHECKING``."""

from __future__ import annotations

import pytest

from tests.architecture._graph import cycles, graph

pytestmark = pytest.mark.unit

# The entry points start the daemon; they sit above it.
_ENTRY_POINTS = {"agentcoord.cli", "agentcoord.__main__"}


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_nothing_imports_the_daemon_package() -> None:
    """Only daemon/ itself and the entry points import agentcoord.daemon (the composition root)."""
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        if not _in(m, "agentcoord.daemon") and m not in _ENTRY_POINTS
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
    """A tool module imports only the private tool helpers (tools/_*.py), never another family."""
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        if _in(m, "agentcoord.tools")
        for t in targets
        if _in(t, "agentcoord.tools")
        and t != "agentcoord.tools"
        and not t.rpartition(".")[2].startswith("_")
        and t != "agentcoord.tools.registry"
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
    above = ("agentcoord.daemon", "agentcoord.tools", "agentcoord.console", "agentcoord.cli")
    bad = sorted(
        f"{m} -> {t}"
        for m, targets in graph().items()
        if _in(m, "agentcoord.leases")
        for t in targets
        if any(_in(t, p) for p in above)
    )
    assert bad == []
