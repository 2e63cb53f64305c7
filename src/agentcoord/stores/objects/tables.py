"""Server-side printing: ``meta.k8s.io/v1`` Table responses with the server-rendered Age.

kubectl asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and prints the cells as they
come, so the server decides the columns and renders durations (k8s ``duration.HumanDuration``).
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Sequence
from typing import Any

from agentcoord.stores.objects.kinds import Column, Kind

__all__ = ["cell", "human_duration", "table", "wants_table"]

_NAME_COL = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace.",
    "priority": 0,
}


def wants_table(accept: str) -> bool:
    """True when the first acceptable media type is a meta.k8s.io Table."""
    first = accept.split(",", 1)[0]
    params = {p.strip() for p in first.split(";")[1:]}
    return "as=Table" in params and "g=meta.k8s.io" in params


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery duration.HumanDuration, as kubectl shows ages."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _lookup(obj: Any, path: str) -> Any:
    cur = obj
    for part in path.strip(".").split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _parse_time(text: str) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except (TypeError, ValueError):
        return None


def cell(column: Column, obj: dict[str, Any], now: float) -> Any:
    """One rendered cell: dates as ages, lists joined, missing values as None."""
    value = _lookup(obj, column.path)
    if value is None:
        return None
    if column.type == "date":
        ts = _parse_time(value) if isinstance(value, str) else None
        return human_duration(now - ts) if ts is not None else value
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return str(value)
    return value


def _row(kind: Kind, obj: dict[str, Any], now: float, include: str) -> dict[str, Any]:
    cells = [obj["metadata"]["name"], *(cell(c, obj, now) for c in kind.columns)]
    row: dict[str, Any] = {"cells": cells}
    if include == "Object":
        row["object"] = obj
    elif include != "None":
        row["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"],
        }
    return row


def table(
    kind: Kind,
    objs: Sequence[dict[str, Any]],
    rv: int | str,
    *,
    now: float | None = None,
    include: str = "Metadata",
    headers: bool = True,
) -> dict[str, Any]:
    """A Table of ``objs``; ``include`` is includeObject (None, Metadata, Object)."""
    now = time.time() if now is None else now
    out: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": str(rv)},
        "columnDefinitions": [],
        "rows": [_row(kind, o, now, include) for o in objs],
    }
    if headers:
        out["columnDefinitions"] = [
            _NAME_COL,
            *(
                {
                    "name": c.name,
                    "type": "string" if c.type == "date" else c.type,
                    "format": "",
                    "description": c.description or c.name,
                    "priority": c.priority,
                }
                for c in kind.columns
            ),
        ]
    return out
