"""Every module a docstring names by a cross-reference exists, and so does the name it points
at in that module: a rename or a move cannot leave a docstring pointing at nothing."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PACKAGE = SRC / "agentcoord"

# A Sphinx cross-reference (``:mod:`.filekeys```, ``:class:`~agentcoord.leases.Leases```).
# Checked are the targets that name where they live: relative to the module's package (a
# leading dot, as a relative import reads), under ``agentcoord.``, or a module by a bare name
# (a sibling module, else one of the standard library's). A bare class or function name is
# the reader's context, not a path, and is left alone.
ROLE = re.compile(
    r":(?P<role>mod|class|func|meth|data|attr|exc|obj|const):`~?(?P<target>[^`<>\s]+)`"
)
# A module path written as code (``agentcoord.leases.filekeys``): checked as a :mod: is.
CODE = re.compile(r"``(?P<target>agentcoord(?:\.\w+)+)``")


def module_name(path: Path) -> str:
    """The dotted name of the module at ``path`` (a package by its ``__init__.py``)."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_of(path: Path) -> str:
    """The package a relative name in ``path`` is taken against (a relative import's)."""
    name = module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def docstrings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Each docstring of the module, its classes and its functions, with its line."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None and node.body:
                yield node.body[0].lineno, doc


def module_file(name: str) -> Path | None:
    """The file of the agentcoord module ``name``, or None when there is none."""
    base = SRC.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _names(body: list[ast.stmt]) -> set[str]:
    """The names a module or class body binds: definitions, assignments (a dataclass's fields
    among them) and imports, those under ``if TYPE_CHECKING`` or ``try`` too."""
    out: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.If | ast.Try):
            out |= _names(node.body + node.orelse)
    return out


@functools.cache
def _parsed(path: Path) -> list[ast.stmt]:
    return ast.parse(path.read_text()).body


def _class_body(body: list[ast.stmt], name: str) -> list[ast.stmt] | None:
    found = [n for n in body if isinstance(n, ast.ClassDef) and n.name == name]
    return found[0].body if found else None


def resolves(target: str) -> bool:
    """Whether the absolute dotted ``target`` is a module of the package, or a name bound in
    one (a class's attribute through its class)."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        path = module_file(".".join(parts[:cut]))
        if path is None:
            continue
        rest = parts[cut:]
        if not rest:
            return True
        body: list[ast.stmt] | None = _parsed(path)
        for i, name in enumerate(rest):
            assert body is not None
            if name not in _names(body):
                # A submodule a package's __init__ does not import is still its attribute.
                return i == 0 and module_file(".".join(parts[: cut + 1])) is not None
            if i + 1 < len(rest):
                body = _class_body(body, name)
                if body is None:
                    return True  # an attribute of an imported name: not followed further
        return True
    return False


def references() -> list[tuple[str, str, str]]:
    """Each checked cross-reference: where, the role, and the absolute name it stands for
    (a bare module name as ``?<package>.<name>``)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "proto" in path.relative_to(PACKAGE).parts[:1]:
            continue  # generated
        rel = path.relative_to(ROOT).as_posix()
        for line, doc in docstrings(ast.parse(path.read_text())):
            found = [(m, m.group("role")) for m in ROLE.finditer(doc)]
            found += [(m, "code") for m in CODE.finditer(doc)]
            for m, role in found:
                target = m.group("target").removesuffix("()")
                where = f"{rel}:{line + doc.count(chr(10), 0, m.start())}"
                if target.startswith("."):
                    dots = len(target) - len(target.lstrip("."))
                    base = package_of(path).split(".")
                    base = base[: len(base) - (dots - 1)]
                    out.append((where, role, ".".join([*base, target.lstrip(".")])))
                elif target.startswith("agentcoord."):
                    out.append((where, role, target))
                elif role == "mod" and "." not in target:
                    out.append((where, role, f"?{package_of(path)}.{target}"))
    return out


REFERENCES = references()


def test_references_are_found() -> None:
    """The scan finds each kind of reference it checks, so an empty scan cannot pass."""
    targets = [t for _, _, t in REFERENCES]
    assert "agentcoord.leases.filekeys" in targets  # :mod:`.filekeys` in leases/__init__.py
    assert any(t.startswith("?") for t in targets)  # a bare module name
    assert any(role == "class" and t.startswith("agentcoord.") for _, role, t in REFERENCES)


@pytest.mark.parametrize(("where", "role", "target"), REFERENCES, ids=[r[0] for r in REFERENCES])
def test_reference_resolves(where: str, role: str, target: str) -> None:
    """The named module (or the name in it) exists under its name now."""
    if target.startswith("?"):
        package, _, bare = target[1:].rpartition(".")
        ok = module_file(f"{package}.{bare}") is not None or (
            module_file(f"agentcoord.{bare}") is not None
            or importlib.util.find_spec(bare) is not None
        )
        assert ok, f"{where}: :{role}:`{bare}` is no module of {package} nor a known one"
    else:
        assert resolves(target), f"{where}: :{role}:`{target}` names nothing"


def test_a_stale_name_is_caught() -> None:
    """A renamed module, a missing name in a module and a missing method are each refused;
    a module, a class, a method and a dataclass field are each accepted."""
    assert not resolves("agentcoord.leases.service")
    assert not resolves("agentcoord.leases.filekeys.no_such_function")
    assert not resolves("agentcoord.leases.leasing.Leases.no_such_verb")
    assert resolves("agentcoord.leases.leasing")
    assert resolves("agentcoord.leases.leasing.Leases")
    assert resolves("agentcoord.leases.leasing.Leases.claim")
    assert resolves("agentcoord.leases.filekeys.FileKey.key")
    assert [m.group("target") for m in CODE.finditer("in ``agentcoord.leases.x``, ``a.b``")] == [
        "agentcoord.leases.x"
    ]
