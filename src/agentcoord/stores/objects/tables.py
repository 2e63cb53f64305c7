"""Server-side printing: ``meta.k8s.io/v1`` Table responses with the server-rendered Age.

kubectl asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and prints the cells as they
come, so the server decides the columns and renders durations (k8s ``duration.HumanDuration``).
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentcoord.stores.objects.kinds import Column, Kind

__all__ = ["LiveCells", "cell", "human_duration", "table", "wants_table"]

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


class LiveCells:
    """Cells the daemon's own views supply for objects of its namespace.

    An Agent's focus is what it published with ``annotate``; it lives in the ``agent-focus``
    KV view, not on the object (docs/architecture.md "Planes": focus is churn and stays out of the
    object store), and ``agentcoord agents`` reads it there. The Table reads the same view,
    so there is one source of truth. Sources are given at construction; for names a source
    does not know (its view not filled yet) and for other namespaces, the column's path is used.
    """

    def __init__(self, namespace: str, sources: Mapping[str, Callable[[str], Any]]) -> None:
        self.namespace = namespace
        self._sources = dict(sources)

    def get(self, source: str, obj: dict[str, Any]) -> Any:
        lookup = self._sources.get(source)
        meta = obj.get("metadata") or {}
        if lookup is None or meta.get("namespace") != self.namespace:
            return None
        return lookup(str(meta.get("name", "")))


def cell(column: Column, obj: dict[str, Any], now: float, live: LiveCells | None = None) -> Any:
    """One rendered cell: dates as ages, lists joined, missing values as None."""
    value = live.get(column.live, obj) if live is not None and column.live else None
    if value is None or value == "":
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


def _row(
    kind: Kind, obj: dict[str, Any], now: float, include: str, live: LiveCells | None
) -> dict[str, Any]:
    cells = [obj["metadata"]["name"], *(cell(c, obj, now, live) for c in kind.columns)]
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
    live: LiveCells | None = None,
) -> dict[str, Any]:
    """A Table of ``objs``; ``include`` is includeObject (None, Metadata, Object); ``live``
    supplies the cells of columns read from a daemon view."""
    now = time.time() if now is None else now
    out: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": str(rv)},
        "columnDefinitions": [],
        "rows": [_row(kind, o, now, include, live) for o in objs],
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
