"""errors.py's docstring draws the whole exception tree: every exception class of the package is
in it under each of its bases, it names no class that does not exist, the modules it cites hold
those classes, and the functions it points at exist."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass

import pytest

import agentcoord
import agentcoord.errors

pytestmark = pytest.mark.unit

_NAME = re.compile(r"[A-Za-z_]\w*")
_CITED = re.compile(r"^([\w/]+)\.py:")
_REF = re.compile(r":(?:func|mod|class|meth):`([\w.]+)`")


@dataclass(frozen=True)
class Node:
    name: str
    parent: str | None
    module: str  # the module the line cites, else its parent's, else agentcoord.errors


def _tree() -> list[Node]:
    """The lines of the docstring's ``::`` block (its indented lines), each as its class, its
    parent and its module; a line is indented four characters under its parent."""
    doc = agentcoord.errors.__doc__ or ""
    lines = doc.split("::\n", 1)[1].splitlines()
    nodes: list[Node] = []
    stack: list[Node] = []
    for line in lines:
        if line and not line.startswith(" "):  # the block ends at the first text after it
            break
        found = _NAME.search(line)
        if found is None:
            continue
        depth = (found.start() - 4) // 4  # the block itself is indented four
        del stack[depth:]
        parent = stack[-1] if stack else None
        cited = _CITED.match(line[found.end() :].strip())
        if cited:
            module = f"agentcoord.{cited.group(1).replace('/', '.')}"
        else:
            module = parent.module if parent else "agentcoord.errors"
        node = Node(found.group(), parent.name if parent else None, module)
        nodes.append(node)
        stack.append(node)
    return nodes


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of agentcoord, by name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(agentcoord.__path__, "agentcoord."):
        if info.name.endswith("__main__"):  # runs the CLI when imported
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                assert found.get(value.__name__, value) is value, f"two {value.__name__}"
                found[value.__name__] = value
    return found


def test_every_exception_class_is_in_the_tree_and_no_other() -> None:
    """The names the tree draws are exactly the package's exception classes (plus Exception,
    the root of the private ones)."""
    classes = _exception_classes()
    drawn = {n.name for n in _tree()} - {"Exception"}
    assert len(classes) >= 40
    assert sorted(classes.keys() - drawn) == [], "missing from errors.py's tree"
    assert sorted(drawn - classes.keys()) == [], "drawn in errors.py's tree, but no such class"


def test_the_tree_draws_each_class_under_each_of_its_bases() -> None:
    """A class is drawn under every base it has (ObjectNotFound under StoreError and under
    NotFound), and under nothing else; the roots derive from Exception."""
    classes = _exception_classes()
    parents: dict[str, set[str]] = {}
    for n in _tree():
        parents.setdefault(n.name, set()).add(n.parent or "Exception")
    parents.pop("Exception")
    for name, cls in classes.items():
        assert parents[name] == {b.__name__ for b in cls.__bases__}, name


def test_the_modules_the_tree_cites_hold_their_classes() -> None:
    """Where the tree first draws a class, the module it cites (``stores/kv/claimstore.py:
    ...``, or its parent's) is the one defining it; errors.py when none is cited."""
    classes = _exception_classes()
    seen: set[str] = {"Exception"}
    for n in _tree():
        if n.name not in seen:
            assert classes[n.name].__module__ == n.module, n.name
        seen.add(n.name)


def test_what_the_docstring_points_at_exists() -> None:
    """Each function, module or class errors.py's docstring refers to can be imported."""
    refs = _REF.findall(agentcoord.errors.__doc__ or "")
    assert "agentcoord.kernel.jsonrpc.error_response" in refs
    for ref in refs:
        target = ref.removeprefix("agentcoord.errors.")
        try:
            importlib.import_module(ref)
            continue
        except ImportError:
            pass
        module, _, attr = ref.rpartition(".")
        if "." not in ref:  # a class of errors.py itself
            module, attr = "agentcoord.errors", target
        assert hasattr(importlib.import_module(module), attr), ref
