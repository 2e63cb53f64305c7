"""Which files a file claim covers, and whether two claims' files overlap (docs/claims.md
"Folders and globs").

A file claim's path (the part after ``//`` of a canonical key, or an absolute path outside git)
is one of:

- a **file**, ``src/app.py``: that file;
- a **folder**, ``src/api/`` (a trailing slash): every file below it, at any depth;
- a **glob**, ``src/**/*.py``: the files it matches, segment by segment as gitignore(5) reads
  it: ``*`` and ``?`` match within one name (never a ``/``), ``[abc]``, ``[a-z]`` and
  ``[!a-z]`` one character of a set, and a ``**`` that is a whole segment any number of
  directories: none or more in front (``**/x``) and between (``a/**/b``), one or more at the
  end (``src/**``: everything inside ``src``). A ``**`` inside a name is a ``*``.

A name may hold a glob character for real (``pages/[id].tsx``): a glob also covers the path
spelled exactly as it is, so such a file is never left out; at worst the claim covers more
than meant.

Two claims overlap when some path is covered by both, whichever is the wider: a folder and a
file in it, a glob and a folder it reaches into, two globs that can match one path. The
decision is exact for these patterns: a segment-by-segment search over both at once, whose
single-name step searches both names' characters at once (character sets as ranges). Pure:
strings in, booleans out; compiled patterns are cached.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "GLOB_CHARS",
    "PathSet",
    "covers",
    "is_pattern",
    "overlaps",
    "path_set",
]

GLOB_CHARS = frozenset("*?[")
_MAX_CHAR = 0x10FFFF


def is_pattern(path: str) -> bool:
    """Whether a claim path names more than one file: a folder (trailing ``/``) or a glob."""
    return path.endswith("/") or any(c in GLOB_CHARS for c in path)


# ---- one name: tokens -------------------------------------------------------------------------

# A token of one name: a literal or set of characters (ranges, and whether negated), or STAR.
_Ranges = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class _Chars:
    ranges: _Ranges
    negated: bool = False


_STAR = None  # ``*``: any run of characters within a name
_Token = _Chars | None
_ANY = _Chars((), True)  # ``?``: any one character


def _class_end(name: str, i: int) -> int:
    """The index of the ``]`` closing the set opened at ``name[i] == "["``, or -1 (then the
    ``[`` is a literal, as fnmatch and gitignore read it)."""
    j = i + 1
    if j < len(name) and name[j] in "!^":
        j += 1
    if j < len(name) and name[j] == "]":
        j += 1  # a ``]`` first in the set is a member
    while j < len(name) and name[j] != "]":
        j += 1
    return j if j < len(name) else -1


def _set_token(body: str) -> _Chars:
    negated = body[:1] in ("!", "^")
    if negated:
        body = body[1:]
    ranges: list[tuple[int, int]] = []
    k = 0
    while k < len(body):
        if k + 2 < len(body) and body[k + 1] == "-":
            lo, hi = ord(body[k]), ord(body[k + 2])
            if lo <= hi:
                ranges.append((lo, hi))
            k += 3
        else:
            ranges.append((ord(body[k]), ord(body[k])))
            k += 1
    return _Chars(tuple(ranges), negated)


@functools.lru_cache(maxsize=4096)
def _tokens(name: str) -> tuple[_Token, ...]:
    out: list[_Token] = []
    i = 0
    while i < len(name):
        c = name[i]
        if c == "*":
            if not out or out[-1] is not _STAR:  # ``**`` inside a name is one ``*``
                out.append(_STAR)
            i += 1
        elif c == "?":
            out.append(_ANY)
            i += 1
        elif c == "[" and (end := _class_end(name, i)) > 0:
            out.append(_set_token(name[i + 1 : end]))
            i = end + 1
        else:
            out.append(_Chars(((ord(c), ord(c)),)))
            i += 1
    return tuple(out)


def _ranges_meet(a: _Ranges, b: _Ranges) -> bool:
    return any(lo1 <= hi2 and lo2 <= hi1 for lo1, hi1 in a for lo2, hi2 in b)


def _outside(pos: _Ranges, neg: _Ranges) -> bool:
    """Whether some character of ``pos`` is in no range of ``neg``."""
    for lo, hi in pos:
        c = lo
        for nlo, nhi in sorted(neg):
            if nhi < c or nlo > hi:
                continue
            if nlo > c:
                return True
            c = nhi + 1
            if c > hi:
                break
        if c <= hi:
            return True
    return False


def _chars_meet(a: _Chars, b: _Chars) -> bool:
    """Whether one character is in both sets (``/`` is in neither: names hold none)."""
    if a.negated and b.negated:
        return True  # each excludes finitely many: most characters are in both
    if a.negated:
        return _outside(b.ranges, a.ranges)
    if b.negated:
        return _outside(a.ranges, b.ranges)
    return _ranges_meet(a.ranges, b.ranges)


def _names_meet(a: str, b: str) -> bool:
    """Whether one name matches both name patterns: a search over (position in a, position in
    b), each step skipping a ``*`` or reading one character both accept."""
    ta, tb = _tokens(a), _tokens(b)
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        i, j = todo.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(ta) and j == len(tb):
            return True
        x = ta[i] if i < len(ta) else False
        y = tb[j] if j < len(tb) else False
        if x is _STAR:
            todo.append((i + 1, j))
        if y is _STAR:
            todo.append((i, j + 1))
        if x is False or y is False:
            continue
        if x is _STAR and y is _STAR:
            continue  # a character both stars read leads back here
        if x is _STAR:
            assert isinstance(y, _Chars)
            todo.append((i, j + 1))  # the star reads y's character
        elif y is _STAR:
            assert isinstance(x, _Chars)
            todo.append((i + 1, j))
        elif isinstance(x, _Chars) and isinstance(y, _Chars) and _chars_meet(x, y):
            todo.append((i + 1, j + 1))
    return False


# ---- a whole path: segments -----------------------------------------------------------------

_DEEP = "**"  # a segment of any number of directories


@dataclass(frozen=True)
class PathSet:
    """The files a claim path covers: its segments (``**`` for any directories) and a regular
    expression that tells a file path whether it is one of them."""

    text: str
    segments: tuple[str, ...]
    regex: re.Pattern[str] | None  # None: the exact path ``text``

    def covers(self, path: str) -> bool:
        """Whether the file ``path`` (no trailing slash) is one of this set's files."""
        if path == self.text:
            return True
        return self.regex is not None and self.regex.fullmatch(path) is not None


def _segments(text: str) -> tuple[str, ...]:
    folder = text.endswith("/")
    parts = [p for p in text.split("/") if p]
    if text.startswith("/"):
        parts[0:0] = [""]  # an absolute path (outside git) keeps its root
    if folder:
        parts.append(_DEEP)
    if parts and parts[-1] == _DEEP:
        # A trailing ``**`` is everything inside (gitignore(5)): one name or more.
        parts.append("*")
    return tuple(parts)


def _name_regex(name: str) -> str:
    out = []
    for tok in _tokens(name):
        if tok is _STAR:
            out.append("[^/]*")
        elif isinstance(tok, _Chars):
            if not tok.negated and len(tok.ranges) == 1 and tok.ranges[0][0] == tok.ranges[0][1]:
                out.append(re.escape(chr(tok.ranges[0][0])))
                continue
            body = "".join(
                re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
                for lo, hi in tok.ranges
            )
            out.append(f"[^/{body}]" if tok.negated else f"(?!/)[{body}]" if body else "(?!)")
    return "".join(out)


def _path_regex(segments: Sequence[str]) -> str:
    out = []
    for k, seg in enumerate(segments):
        last = k == len(segments) - 1
        if seg == _DEEP:
            out.append("(?:[^/]*/)*" if not last else ".*")
        else:
            out.append(_name_regex(seg) + ("" if last else "/"))
    return "".join(out)


@functools.lru_cache(maxsize=8192)
def path_set(text: str) -> PathSet:
    """The :class:`PathSet` of the claim path ``text`` (cached: the guard asks on every
    edit)."""
    segments = _segments(text)
    if not is_pattern(text):
        return PathSet(text, segments, None)
    return PathSet(text, segments, re.compile(_path_regex(segments), re.DOTALL))


def covers(claimed: str, path: str) -> bool:
    """Whether a claim on ``claimed`` (a file, folder or glob) covers the file ``path``."""
    return path_set(claimed).covers(path)


def _segments_meet(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether one path is in both segment patterns: a search over (segment of a, segment of
    b), a ``**`` matching no segment, or reading one the other side has."""
    seen: set[tuple[int, int]] = set()
    todo = [(0, 0)]
    while todo:
        i, j = todo.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(a) and j == len(b):
            return True
        x = a[i] if i < len(a) else None
        y = b[j] if j < len(b) else None
        if x == _DEEP:
            todo.append((i + 1, j))
            if y is not None:
                todo.append((i, j + 1))  # the ``**`` takes y's segment (or y's ``**``)
        if y == _DEEP:
            todo.append((i, j + 1))
            if x is not None:
                todo.append((i + 1, j))
        if x is None or y is None or x == _DEEP or y == _DEEP:
            continue
        if _names_meet(x, y):
            todo.append((i + 1, j + 1))
    return False


def overlaps(a: str, b: str) -> bool:
    """Whether some file is covered by a claim on ``a`` and by one on ``b`` (each a file,
    folder or glob path of one repository)."""
    if a == b:
        return True
    pa, pb = path_set(a), path_set(b)
    if pa.regex is None:
        return pb.covers(a)
    if pb.regex is None:
        return pa.covers(b)
    # Either glob may also stand for its own spelling (a name with ``[`` in it).
    return _segments_meet(pa.segments, pb.segments) or pa.covers(b) or pb.covers(a)
