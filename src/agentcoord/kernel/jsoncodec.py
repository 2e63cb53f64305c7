"""Compact JSON encoding for the hot paths: every reply, a tool result's text, a claim record
and an audit event.

orjson encodes a tool reply in about a tenth of the time of the standard library's encoder,
which matters on the claim path (docs/claims.md "Benchmark"). Its output is the same JSON
value, written compactly in UTF-8. What orjson refuses, or writes otherwise, goes to the
standard library instead, so the value on the wire never changes with the encoder:

- integers beyond 64 bits and dict keys that are not strings: orjson raises, and the
  standard library encodes them;
- datetimes and dataclasses are passed to ``default`` (orjson would write them natively,
  and differently from ``default=str``), so an unknown type is ``str()``-ed where the
  standard encoder did that and refused where it refused. Subclasses of str, int, dict and
  list are written as their base type, as the standard library writes them; an Enum by its
  value. NaN and the infinities, which are not JSON, are written as null.

Decoding stays with the standard library: the hostile-input rules of kernel/jsonrpc.py (a
huge integer is parsed, not refused; the int-digits limit) are the ones its tests pin.

A lone surrogate (JSON's ``"\ud800"``, an escape with no pair) decodes to a Python string that
is no valid Unicode and cannot be written as UTF-8 (RFC 8259 section 8.2 leaves such text's
behaviour unpredictable). Input is refused where it comes in (:func:`lone_surrogate` finds
it: docs/security.md "Input at the boundary"); whatever still holds one, a record stored by an
older version, is written with U+FFFD in its place, so it can never fail a reply or a listing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["dumps", "lone_surrogate", "valid_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")

_PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any, *, default: Callable[[Any], Any] | None = None) -> bytes:
    """``value`` as compact UTF-8 JSON. ``default=str`` writes unknown types as their
    ``str()``; without it they raise TypeError, as ``json.dumps`` does."""
    try:
        return orjson.dumps(value, default=default or _refuse, option=_PASSTHROUGH)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        # A 65-bit integer, a non-string key, deep nesting, or a type ``default`` refused:
        # the standard library decides, and raises what ``json.dumps`` would.
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=default)
        return valid_text(text).encode()


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a pair written as two code points
    is joined into the character it stands for)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _shown(key: str) -> str:
    return key.encode("utf-8", "backslashreplace").decode()[:64]


def lone_surrogate(value: Any) -> str | None:
    """Where decoded JSON ``value`` holds a lone surrogate, in a string or a key: a path such
    as ``arguments.intent`` or ``items[2]`` ("" for ``value`` itself); None when nowhere."""
    try:
        orjson.dumps(value)  # refuses lone surrogates, fast; also deep nesting, big ints
        return None
    except TypeError:
        pass
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:  # no recursion: as deep as the decoder let the value be
        path, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path
        elif isinstance(item, dict):
            for key, sub in item.items():
                where = f"{path}.{_shown(key)}" if path else _shown(key)
                if _SURROGATE.search(key):
                    return where
                stack.append((where, sub))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", sub) for i, sub in enumerate(item))
    return None
