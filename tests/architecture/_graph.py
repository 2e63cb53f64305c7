"""The import graph of ``src/agentcoord``, read from the source with :mod:`ast`: every import,
at module level, inside a function or under ``TYPE_CHECKING``, is an edge."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import agentcoord

ROOT = Path(agentcoord.__file__).parent


def module_name(path: Path) -> str:
    parts = ("agentcoord", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_files() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*.py")):
        if "proto" not in path.relative_to(ROOT).parts:  # generated protobuf code
            yield path


def imports(path: Path, known: set[str]) -> set[str]:
    """The agentcoord modules ``path`` imports (``from pkg import mod`` names the module)."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("agentcoord"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if not target.startswith("agentcoord"):
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
    found.discard(me)
    return found


@functools.cache
def graph() -> dict[str, set[str]]:
    files = list(source_files())
    known = {module_name(p) for p in files}
    return {module_name(p): imports(p, known) & known for p in files}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found
