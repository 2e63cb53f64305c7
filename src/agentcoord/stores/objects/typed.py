"""Typed spec and status: a kind's parts declared once, as dataclasses (pure).

Each field of a part is a :func:`prop` (or :func:`date`) with its documentation and
constraints; its Python type says its OpenAPI type. From that one declaration come the
part's OpenAPI v3 schema (:func:`schema_of`: validation, ``/openapi/v3``, ``kubectl explain``,
the CRDs) and its wire codec (:func:`to_wire`, :func:`from_wire`). docs/store.md "Declaring a
kind" shows how a kind is declared and how a field is added.

Absent is ``None``: every field defaults to ``None``, :func:`to_wire` omits ``None`` fields,
and :func:`from_wire` reads a missing field, an explicit ``null`` (the apiserver's "unset")
and a value of the wrong type alike as ``None``. JSON names are the Python names in
camelCase (``opened_at`` is ``openedAt``) unless a field names its own.

Types: ``str``, ``int`` (int64), ``float`` (number), ``bool``, ``list[T]``, a nested part
(another such dataclass), ``dict[str, str]`` (a map of strings) and ``dict[str, Any]``
(free-form: unknown fields kept, as for a response schema).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Prop", "date", "from_wire", "json_name", "prop", "schema_of", "to_wire"]

Schema = dict[str, Any]
T = TypeVar("T")
_META = "agentcoord.prop"


@dataclass(frozen=True)
class Prop:
    """What the schema says of one field besides its type."""

    doc: str = ""
    name: str = ""  # the JSON name, when not the camelCase of the Python name
    required: bool = False
    enum: tuple[str, ...] = ()
    minimum: int | None = None
    min_items: int | None = None
    date_time: bool = False  # a string in RFC 3339 (format date-time)


def prop(
    doc: str = "",
    *,
    name: str = "",
    required: bool = False,
    enum: tuple[str, ...] = (),
    minimum: int | None = None,
    min_items: int | None = None,
) -> Any:
    """A field of a spec or status part; absent (``None``) unless set."""
    meta = Prop(doc, name, required, enum, minimum, min_items)
    return dataclasses.field(default=None, metadata={_META: meta})


def date(doc: str = "") -> Any:
    """A time field: a string in RFC 3339 (``format: date-time``)."""
    return dataclasses.field(default=None, metadata={_META: Prop(doc, date_time=True)})


def json_name(f: dataclasses.Field[Any]) -> str:
    """The field's JSON name."""
    meta: Prop = f.metadata.get(_META, Prop())
    if meta.name:
        return meta.name
    head, *rest = f.name.split("_")
    return head + "".join(w.capitalize() for w in rest)


@dataclass(frozen=True)
class _Field:
    name: str  # Python
    wire: str  # JSON
    hint: Any  # the type without None
    meta: Prop
    read: Callable[[Any], Any]  # the wire value to the field's (None when absent or wrong)
    write: Callable[[Any], Any]  # the field's value (not None) to the wire


_FIELDS: dict[type, tuple[_Field, ...]] = {}


def _fields(cls: type) -> tuple[_Field, ...]:
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = _read_fields(cls)
    return found


def _read_fields(cls: type) -> tuple[_Field, ...]:
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get(_META)
        if not isinstance(meta, Prop):
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with prop() or date()")
        hint = _without_none(hints[f.name])
        out.append(_Field(f.name, json_name(f), hint, meta, _reader(hint), _writer(hint)))
    return tuple(out)


def _without_none(hint: Any) -> Any:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"{hint}: a field is one type, or None when absent")
        return args[0]
    return hint


def _is_part(hint: Any) -> bool:
    return isinstance(hint, type) and dataclasses.is_dataclass(hint)


# -- the schema ------------------------------------------------------------------------------


def schema_of(cls: type) -> Schema:
    """The OpenAPI v3 schema of a part: an object with one property per field."""
    fields = _fields(cls)
    out: Schema = {"type": "object", "properties": {f.wire: _field_schema(f) for f in fields}}
    required = [f.wire for f in fields if f.meta.required]
    if required:
        out["required"] = required
    return out


def _field_schema(f: _Field) -> Schema:
    out = _type_schema(f.hint, f.meta)
    if f.meta.enum:
        out["enum"] = list(f.meta.enum)
    if f.meta.minimum is not None:
        out["minimum"] = f.meta.minimum
    if f.meta.min_items is not None:
        out["minItems"] = f.meta.min_items
    if f.meta.doc:
        out["description"] = f.meta.doc
    if out.pop("x-kubernetes-preserve-unknown-fields", False):
        out["x-kubernetes-preserve-unknown-fields"] = True  # after the description
    return out


def _type_schema(hint: Any, meta: Prop) -> Schema:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is str:
        return {"type": "string", "format": "date-time"} if meta.date_time else {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer", "format": "int64"}
    if hint is float:
        return {"type": "number"}
    if origin is list:
        return {"type": "array", "items": _type_schema(args[0], Prop())}
    if origin is dict and args == (str, str):
        return {"type": "object", "additionalProperties": {"type": "string"}}
    if origin is dict and args == (str, Any):
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    if _is_part(hint):
        return schema_of(hint)
    raise TypeError(f"{hint!r} has no OpenAPI type here")


# -- the wire codec --------------------------------------------------------------------------


def to_wire(part: Any) -> dict[str, Any]:
    """The part as JSON-ready data, in declaration order; ``None`` fields are omitted."""
    out: dict[str, Any] = {}
    for f in _fields(type(part)):
        value = getattr(part, f.name)
        if value is not None:
            out[f.wire] = f.write(value)
    return out


def from_wire(cls: type[T], data: Any) -> T:
    """The part ``data`` holds; a field missing, null or of the wrong type is ``None``, and
    fields the part does not declare are not read (the schema prunes them on write)."""
    values = data if isinstance(data, dict) else {}
    return cls(**{f.name: f.read(values.get(f.wire)) for f in _fields(cls)})


def _same(value: Any) -> Any:
    return value


def _writer(hint: Any) -> Callable[[Any], Any]:
    """How a field's value goes to the wire (built once per field, not per value)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if _is_part(hint):
        return to_wire
    if origin is list:
        item = _writer(args[0])
        return lambda v: [item(x) for x in v]
    return _same


def _reader(hint: Any) -> Callable[[Any], Any]:
    """How a wire value is read as a field's, None when it is not one (built once)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint in (str, bool):
        return lambda v: v if isinstance(v, hint) else None
    if hint is int:
        return lambda v: v if isinstance(v, int) and not isinstance(v, bool) else None
    if hint is float:
        return lambda v: v if isinstance(v, int | float) and not isinstance(v, bool) else None
    if origin is list:
        item = _reader(args[0])

        def read_list(v: Any) -> Any:
            if not isinstance(v, list):
                return None
            return [x for x in map(item, v) if x is not None]

        return read_list
    if origin is dict and args == (str, Any):
        return lambda v: v if isinstance(v, dict) else None
    if origin is dict:
        return lambda v: (
            {k: x for k, x in v.items() if type(x) is str} if isinstance(v, dict) else None
        )
    if _is_part(hint):
        return lambda v: from_wire(hint, v) if isinstance(v, dict) else None
    raise TypeError(f"{hint!r} has no wire form here")
