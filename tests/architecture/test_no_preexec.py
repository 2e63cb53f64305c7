"""No ``preexec_fn=`` in src/agentcoord: Python code between fork and exec is unsafe in the
threaded daemon (a lock held by another thread stays held in the child forever); the death
signal and rlimits are set before exec by ``localagents.sandbox.exec_prefix`` instead
(docs/localagents.md "Lifetime and rlimits")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.architecture._graph import ROOT, source_files

pytestmark = pytest.mark.unit


def preexec_calls(path: Path, base: Path) -> list[str]:
    """``file:line`` (relative to ``base``) of every call in ``path`` passing ``preexec_fn``."""
    tree = ast.parse(path.read_text(), str(path))
    return [
        f"{path.relative_to(base)}:{kw.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for kw in node.keywords
        if kw.arg == "preexec_fn"
    ]


def test_no_preexec_fn_in_the_source() -> None:
    """No call anywhere in src/agentcoord passes preexec_fn= (named as file:line if one does)."""
    found = [hit for path in source_files() for hit in preexec_calls(path, ROOT.parent)]
    assert found == [], "preexec_fn runs Python between fork and exec: " + ", ".join(found)


def test_the_scan_finds_a_preexec_fn_in_a_nested_call(tmp_path: Path) -> None:
    """The scan sees a preexec_fn keyword inside another call and names its line."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import subprocess\n"
        "def f():\n"
        "    return wrap(subprocess.Popen(\n"
        "        ['true'],\n"
        "        preexec_fn=lambda: None,\n"
        "    ))\n"
    )
    assert preexec_calls(sample, tmp_path) == ["sample.py:5"]
