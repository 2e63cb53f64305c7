"""Label selectors (equality and set-based) and field selectors, parsed once, matched often.

Grammar as in k8s.io/apimachinery/pkg/labels: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``,
``a notin (x)``, ``a``, ``!a``, joined by commas. Field selectors support ``metadata.name``
and ``metadata.namespace`` with ``=``, ``==`` and ``!=`` (what custom resources serve).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agentcoord.stores.objects.statuserrors import BadRequest

__all__ = ["FieldSelector", "LabelSelector", "Requirement", "parse_fields", "parse_labels"]

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VAL = r"[-A-Za-z0-9_.]*"
_TOKEN = re.compile(
    rf"\s*(?:(?P<not>!)\s*(?P<nkey>{_KEY})"
    rf"|(?P<key>{_KEY})\s*(?:(?P<op>==|=|!=)\s*(?P<val>{_VAL})"
    rf"|\s+(?P<setop>in|notin)\s*\((?P<set>[^)]*)\))?)\s*(?:,|$)"
)


@dataclass(frozen=True)
class Requirement:
    """One clause: ``op`` is one of = != in notin exists !exists."""

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        has = self.key in labels
        if self.op == "exists":
            return has
        if self.op == "!exists":
            return not has
        if self.op in ("=", "in"):
            return has and labels[self.key] in self.values
        # != and notin also match objects without the key, as in Kubernetes
        return not has or labels[self.key] not in self.values


@dataclass(frozen=True)
class LabelSelector:
    """A conjunction of requirements; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


def parse_labels(text: str | None) -> LabelSelector:
    """Parse a label selector; raise :class:`BadRequest` with the apiserver's wording."""
    text = (text or "").strip()
    if not text:
        return LabelSelector()
    reqs: list[Requirement] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise BadRequest(f'unable to parse requirement: found "{text[pos:]}", expected: key')
        pos = m.end()
        if m.group("nkey"):
            reqs.append(Requirement(m.group("nkey"), "!exists"))
        elif m.group("op"):
            op = "!=" if m.group("op") == "!=" else "="
            reqs.append(Requirement(m.group("key"), op, frozenset([m.group("val")])))
        elif m.group("setop"):
            values = frozenset(v.strip() for v in m.group("set").split(",") if v.strip())
            if not values and m.group("setop") == "in":
                raise BadRequest("for 'in', 'notin' operators, values set can't be empty")
            reqs.append(Requirement(m.group("key"), m.group("setop"), values))
        else:
            reqs.append(Requirement(m.group("key"), "exists"))
    return LabelSelector(tuple(reqs))


_FIELDS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "metadata.name": lambda o: str(o.get("metadata", {}).get("name", "")),
    "metadata.namespace": lambda o: str(o.get("metadata", {}).get("namespace", "")),
}

_IDENTITY = frozenset(("metadata.name", "metadata.namespace"))


@dataclass(frozen=True)
class FieldSelector:
    """Conjunction of (field, equal?, value) terms over the supported fields."""

    terms: tuple[tuple[str, bool, str], ...] = ()

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((_FIELDS[f](obj) == v) == eq for f, eq, v in self.terms)

    def equal(self, field: str) -> str | None:
        """The value a ``field=value`` term pins, for index lookups."""
        for f, eq, v in self.terms:
            if f == field and eq:
                return v
        return None

    @property
    def on_identity(self) -> bool:
        """Every term is on metadata.name or metadata.namespace (an object's key holds both)."""
        return all(f in _IDENTITY for f, _, _ in self.terms)


def parse_fields(text: str | None) -> FieldSelector:
    """Parse a field selector over metadata.name / metadata.namespace."""
    terms: list[tuple[str, bool, str]] = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        if "!=" in part:
            field, value = part.split("!=", 1)
            eq = False
        elif "==" in part:
            field, value = part.split("==", 1)
            eq = True
        elif "=" in part:
            field, value = part.split("=", 1)
            eq = True
        else:
            raise BadRequest(f"invalid selector: '{part}'; can't understand '{part}'")
        field = field.strip()
        if field not in _FIELDS:
            raise BadRequest(f"field label not supported: {field}")
        terms.append((field, eq, value.strip()))
    return FieldSelector(tuple(terms))
