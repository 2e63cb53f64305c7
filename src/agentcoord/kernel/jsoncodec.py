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
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["dumps"]

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
        return text.encode()
