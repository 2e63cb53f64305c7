"""Every background task belongs to a task group (docs/architecture.md "Tasks"): an AST scan of
``src/agentcoord`` finds any task created outside one.

Refused: ``asyncio.create_task``, ``asyncio.ensure_future`` (or either imported bare), and
``<receiver>.create_task`` for any receiver but a task group: a name bound by ``async with
asyncio.TaskGroup() as <name>`` in the same or an enclosing function, or a parameter annotated
``asyncio.TaskGroup``. ``kernel/tasks.py`` (TaskSet, which owns a group) is the one exception.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.architecture._graph import ROOT, source_files

pytestmark = pytest.mark.unit

EXEMPT = {ROOT / "kernel" / "tasks.py"}  # TaskSet: spawns into the group it owns
_SPAWNERS = {"create_task", "ensure_future"}


def _is_task_group(node: ast.expr | None) -> bool:
    """``asyncio.TaskGroup`` or a bare ``TaskGroup`` (called or as an annotation)."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr == "TaskGroup"
    return isinstance(node, ast.Name) and node.id == "TaskGroup"


def _own_nodes(fn: ast.AST) -> list[ast.AST]:
    """The nodes of a function (or module) body, not those of functions nested in it."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        out.append(node)
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return out


def _groups_bound_in(fn: ast.AST) -> set[str]:
    """Names a function binds to a task group: ``async with TaskGroup() as n`` or a parameter
    annotated ``TaskGroup``."""
    names: set[str] = set()
    if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        a = fn.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
            if _is_task_group(arg.annotation):
                names.add(arg.arg)
    for node in _own_nodes(fn):
        if isinstance(node, ast.AsyncWith):
            for item in node.items:
                if _is_task_group(item.context_expr) and isinstance(item.optional_vars, ast.Name):
                    names.add(item.optional_vars.id)
    return names


def _why(call: ast.Call, groups: set[str]) -> str | None:
    """Why ``call`` creates a task outside a task group, or None when it does not."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in _SPAWNERS:
        return f"{func.id}()"
    if not isinstance(func, ast.Attribute) or func.attr not in _SPAWNERS:
        return None
    receiver = func.value
    if isinstance(receiver, ast.Name) and receiver.id == "asyncio":
        return f"asyncio.{func.attr}()"
    if func.attr == "create_task" and isinstance(receiver, ast.Name) and receiver.id in groups:
        return None
    return f"{ast.unparse(receiver)}.{func.attr}() on something that is not a task group"


def violations(source: str, filename: str = "<src>") -> list[tuple[int, str]]:
    """(line, what) for each task ``source`` creates outside a task group."""
    tree = ast.parse(source, filename)
    found: list[tuple[int, str]] = []

    def visit(scope: ast.AST, groups: set[str]) -> None:
        inner = groups | _groups_bound_in(scope)
        for node in _own_nodes(scope):
            if isinstance(node, ast.Call) and (why := _why(node, inner)):
                found.append((node.lineno, why))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                visit(node, inner)

    visit(tree, set())
    return sorted(found)


def _scan() -> list[str]:
    out = []
    for path in source_files():
        if path in EXEMPT:
            continue
        for line, why in violations(path.read_text(), str(path)):
            out.append(f"{path.relative_to(ROOT.parent)}:{line}: {why}")
    return out


def test_no_task_outside_a_task_group() -> None:
    """No module of src/agentcoord creates a task outside a task group (TaskSet or a local
    asyncio.TaskGroup); each offender is named file:line."""
    found = _scan()
    assert not found, "tasks outside a task group:\n" + "\n".join(found)


def test_the_scan_finds_each_way_out_of_a_task_group() -> None:
    """The scanner flags each refused form and passes the task-group forms, nested too."""
    source = """
import asyncio
from asyncio import ensure_future

async def bad(loop, self):
    asyncio.create_task(f())
    asyncio.ensure_future(f())
    ensure_future(f())
    loop.create_task(f())
    asyncio.get_running_loop().create_task(f())
    self._tg.create_task(f())

async def good(tg: asyncio.TaskGroup):
    tg.create_task(f())
    async with asyncio.TaskGroup() as group:
        group.create_task(f())

        def later():
            group.create_task(f())

async def not_bound_here():
    group.create_task(f())
"""
    assert [line for line, _ in violations(source)] == [6, 7, 8, 9, 10, 11, 22]


def test_the_scan_walks_every_module() -> None:
    """The scan reads the package's modules (so an empty walk cannot pass the lint)."""
    files = list(source_files())
    assert ROOT / "agentops" / "controller.py" in files
    assert len(files) > 100
    assert all(isinstance(p, Path) for p in files)
