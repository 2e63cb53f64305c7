"""Which files a folder or glob claim covers and when two claims overlap (docs/claims.md
"Folders and globs"): a table of cases, and a property check that the overlap decision never
misses a path both claims cover."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcoord.leases.matcher import covers, is_pattern, overlaps
from agentcoord.leases.patterns import literal_prefix

pytestmark = pytest.mark.unit

COVERS = [
    # (claim, file, covered)
    ("src/app.py", "src/app.py", True),
    ("src/app.py", "src/app.pyc", False),
    ("src/api/", "src/api/x.py", True),
    ("src/api/", "src/api/deep/er/x.py", True),
    ("src/api/", "src/apix.py", False),
    ("src/api/", "src/api", False),  # the folder's files, not a file named like it
    ("src/**/*.py", "src/x.py", True),
    ("src/**/*.py", "src/a/b/x.py", True),
    ("src/**/*.py", "src/x.pyc", False),
    ("src/**/*.py", "lib/x.py", False),
    ("src/**", "src/a/b", True),
    ("src/**", "src", False),
    ("**/*.md", "README.md", True),
    ("**/*.md", "docs/a/b.md", True),
    ("*.md", "README.md", True),
    ("*.md", "docs/a.md", False),  # * never crosses a /
    ("src/*.py", "src/a/b.py", False),
    ("src/?.py", "src/a.py", True),
    ("src/?.py", "src/ab.py", False),
    ("src/[ab].py", "src/b.py", True),
    ("src/[a-c].py", "src/d.py", False),
    ("src/[!a-c].py", "src/d.py", True),
    ("src/[!a-c].py", "src/b.py", False),
    ("pages/[id].tsx", "pages/[id].tsx", True),  # a real name with a glob character
    ("pages/[id].tsx", "pages/i.tsx", True),
    ("src/a**b.py", "src/aXYb.py", True),  # ** inside a name is one *
    ("src/a**b.py", "src/a/b.py", False),
    ("**", "any/where/at/all", True),
    ("/abs/dir/", "/abs/dir/f", True),  # outside git: absolute paths
    ("/abs/*.txt", "/abs/sub/f.txt", False),
]


@pytest.mark.parametrize(("claim", "path", "want"), COVERS)
def test_covers(claim: str, path: str, want: bool) -> None:
    """A claim covers exactly the files its folder or glob names, gitignore's way."""
    assert covers(claim, path) is want


OVERLAPS = [
    # (a, b, overlap): each pair is checked both ways round
    ("src/**/*.py", "src/api/", True),
    ("*.md", "src/x.py", False),
    ("src/api/", "src/api/x.py", True),
    ("src/api/", "src/", True),
    ("src/api/", "src/apix/", False),
    ("src/api/", "lib/", False),
    ("**", "a/b", True),
    ("**/*.md", "*.py", False),
    ("**/*.md", "docs/", True),
    ("src/*.py", "src/a/", False),  # a folder's files are below it, * stays in src
    ("src/*", "src/a/", False),
    ("src/**", "src/a/", True),
    ("*.py", "*.md", False),
    ("a*b", "*c", False),
    ("a*", "*b", True),
    ("[ab]x", "[bc]x", True),
    ("[a]x", "[b]x", False),
    ("[!a]x", "[!b]x", True),
    ("[!a]x", "ax", False),
    ("?", "ab", False),
    ("??", "a*", True),
    ("x/**/y/*.py", "x/q/**/z", False),
    ("x/**/y/*.py", "x/q/**/y/*", True),
    ("**/test_*.py", "tests/**/*_x.py", True),
    ("src/x.py", "src/y.py", False),
    ("src/x.py", "src/x.py", True),
]


@pytest.mark.parametrize(("a", "b", "want"), OVERLAPS)
def test_overlaps(a: str, b: str, want: bool) -> None:
    """Two claims overlap when some file is in both, whichever is the wider."""
    assert overlaps(a, b) is want
    assert overlaps(b, a) is want


def test_what_is_a_pattern_and_its_literal_prefix() -> None:
    """A trailing slash or a glob character makes a folder or glob; its leading directories
    without one are where every covered file lies."""
    assert [is_pattern(p) for p in ("src/a.py", "src/", "*.md", "a/[x]")] == [
        False,
        True,
        True,
        True,
    ]
    assert literal_prefix("src/**/*.py") == "src/"
    assert literal_prefix("src/api/") == "src/api/"
    assert literal_prefix("*.md") == ""
    assert literal_prefix("a/b[c]/d") == "a/"


# ---- the overlap decision never misses a path both cover -----------------------------------

_NAMES = ["a", "b", "ab", "*", "a*", "*b", "?", "[ab]", "[!a]", "**"]
_FILES = ["a", "b", "ab", "ba", "c"]


def _pattern(parts: list[str], folder: bool) -> str:
    return "/".join(parts) + ("/" if folder else "")


_patterns = st.builds(
    _pattern, st.lists(st.sampled_from(_NAMES), min_size=1, max_size=2), st.booleans()
)


@settings(max_examples=400, deadline=None)
@given(_patterns, _patterns)
def test_overlap_is_decided_exactly(a: str, b: str) -> None:
    """Over every file path of up to four names from a small alphabet (enough for a witness
    of these patterns): overlaps says yes exactly when some path is covered by both claims,
    so the guard neither lets an overlapping claim through nor refuses a disjoint one; and it
    is symmetric."""
    both = any(
        covers(a, path) and covers(b, path)
        for depth in range(1, 5)
        for path in ("/".join(names) for names in itertools.product(_FILES, repeat=depth))
    )
    assert overlaps(a, b) is both, (a, b)
    assert overlaps(b, a) is both
