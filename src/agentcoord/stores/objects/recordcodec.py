"""How a record is an object: a table of slots, from which both directions follow (pure).

A record type (a :class:`~agentcoord.stores.records.ChannelRecord`, ...) is kept as objects
of one kind (docs/store.md "Records are objects"). Its :class:`RecordCodec` maps each record
field to one *slot*: a field of the kind's typed spec or status (:mod:`kinds`, by its Python
name, so the JSON name comes from the kind's one declaration) or a per-field annotation, a
*note*, under :data:`NOTE_PREFIX`, with a :class:`Conv` for the values. Encoding, decoding and
the set of fields a write owns are derived from the table; what one field cannot say alone (a
channel's expiry from its TTL, a prompt's reply subject) is a small ``more`` hook that names
the extra fields it writes in ``also_owns``. A slot naming a field its kind does not declare
fails at import.

Absent is explicit: a :class:`Conv` encodes to ``None`` for "omit this field" and decodes to
:data:`ABSENT` for "the object does not say"; the record's own default applies then (or the
slot's ``missing``), after the fields of a legacy record annotation were laid under the
object's own (``under`` of :meth:`RecordCodec.decode`, given only by
:meth:`.repository.Repository.drop_legacy` as it moves them into the object).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Generic, Literal, TypeVar

from agentcoord.errors import AgentCoordError
from agentcoord.kernel.duration import parse_duration
from agentcoord.stores.objects.kinds import GROUP, GROUP_VERSION, AgentRef, Kind
from agentcoord.stores.objects.typed import from_wire, json_name, to_wire

__all__ = [
    "ABSENT",
    "AGENT_REF",
    "DURATION",
    "INT_TEXT",
    "JSON_DICT",
    "KEPT_TEXT",
    "KEY_ANNOTATION",
    "KIND_LABEL",
    "LIST",
    "NOTE_PREFIX",
    "SAME",
    "SOME_LIST",
    "TEXT",
    "TIME",
    "Conv",
    "Parts",
    "RecordCodec",
    "Slot",
    "mapped",
    "note",
    "object_name",
    "one_of",
    "spec",
    "stamp",
    "status",
    "unstamp",
]

log = logging.getLogger(__name__)

KIND_LABEL = f"{GROUP}/record-kind"
KEY_ANNOTATION = f"{GROUP}/record-key"
NOTE_PREFIX = f"record.{GROUP}/"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")
Obj = dict[str, Any]


class _Absent:
    """The type of :data:`ABSENT`."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()


def stamp(ts: float) -> str:
    """RFC 3339 with microseconds (metav1.MicroTime's form), so record times round-trip."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def unstamp(text: Any) -> float | None:
    """Unix seconds of an RFC 3339 string; None when absent or unparsable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


def object_name(prefix: str, key: str) -> str:
    """The object name for a record key: the key itself when it is a DNS label, else a
    stable ``<prefix>-<digest>`` (the key is kept in :data:`KEY_ANNOTATION`)."""
    if len(key) <= 63 and _DNS_LABEL.match(key):
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{prefix}-{digest}"


# -- values ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conv:
    """A record value to its slot's value (``None``: omit) and back (:data:`ABSENT`: the
    object does not say). Decoding gets ``None`` for a slot the object lacks."""

    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


def _present(value: Any) -> Any:
    return ABSENT if value is None else value


def _text_or_absent(value: Any) -> Any:
    return value if isinstance(value, str) and value else ABSENT


def _duration(text: Any) -> Any:
    if text is None:
        return ABSENT
    try:
        return max(1, round(parse_duration(text)))
    except AgentCoordError:
        log.warning("spec.ttl %r is not a duration", text)
        return None


def _int_text(text: Any) -> Any:
    try:
        return ABSENT if text is None else int(text)
    except ValueError:
        return ABSENT


def _json_dict(text: Any) -> Any:
    if text is None:
        return ABSENT
    value = json.loads(text)
    if not isinstance(value, dict):
        raise TypeError("a JSON object")
    return value


def _ref_name(ref: AgentRef | None) -> Any:
    return ABSENT if ref is None else _text_or_absent(ref.name)


#: Written as it is; read as it is.
SAME = Conv(lambda v: v, _present)
#: A string, omitted when empty; an empty one reads as absent.
TEXT = Conv(lambda v: v or None, _text_or_absent)
#: A string, always written; an empty one reads as absent.
KEPT_TEXT = Conv(lambda v: v, _text_or_absent)
#: A list, always written.
LIST = Conv(list, lambda v: ABSENT if v is None else [str(x) for x in v])
#: A list, omitted when empty.
SOME_LIST = Conv(lambda v: list(v) or None, LIST.decode)
#: Unix seconds as RFC 3339 with microseconds; omitted when 0 or None.
TIME = Conv(lambda v: stamp(v) if v else None, lambda v: _present(unstamp(v)))
#: Whole seconds as a Go duration (``60s``); omitted when 0 or None.
DURATION = Conv(lambda v: f"{v}s" if v else None, _duration)
#: An integer as the text of a note; None is omitted.
INT_TEXT = Conv(lambda v: None if v is None else str(v), _int_text)
#: A JSON object as the text of a note; omitted when empty.
JSON_DICT = Conv(
    lambda v: json.dumps(v, separators=(",", ":"), default=str) if v else None, _json_dict
)
#: An agent's name as a reference ``{kind: Agent, name}``.
AGENT_REF = Conv(lambda v: AgentRef(kind="Agent", name=v), _ref_name)


def mapped(renames: Mapping[Any, Any]) -> Conv:
    """A value renamed on the wire (``Open`` is ``Pending``); others pass as they are."""
    back = {w: r for r, w in renames.items()}
    return Conv(lambda v: renames.get(v, v), lambda w: ABSENT if w is None else back.get(w, w))


def one_of(values: tuple[str, ...]) -> Conv:
    """A value the kind's enum allows; anything else reads as absent."""
    return Conv(lambda v: v, lambda w: w if w in values else ABSENT)


# -- slots -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """Where a record field lives: ``part`` spec, status or note; ``name`` is the part's
    field (Python name) or the note's name; ``missing`` is the record value when neither the
    object nor a legacy annotation has the field (else the record's default)."""

    part: Literal["spec", "status", "note"]
    name: str
    conv: Conv
    missing: Any = ABSENT


def spec(name: str, conv: Conv = SAME, *, missing: Any = ABSENT) -> Slot:
    return Slot("spec", name, conv, missing)


def status(name: str, conv: Conv = SAME, *, missing: Any = ABSENT) -> Slot:
    return Slot("status", name, conv, missing)


def note(name: str, conv: Conv = TEXT, *, missing: Any = ABSENT) -> Slot:
    return Slot("note", name, conv, missing)


@dataclass
class Parts(Generic[S, T]):
    """A record's place in its object: the kind's typed spec and status, and its notes."""

    spec: S
    status: T
    notes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordCodec(Generic[R, S, T]):
    """How records of ``record_type`` are objects of ``kind``; see the module docstring.

    ``key``/``key_fields`` give a record's key and the record fields a key sets;
    ``encode_more(record, parts)`` and ``decode_more(values, parts, metadata)`` do what the
    slots cannot, writing only the part fields named in ``also_owns`` (``spec.<field>``,
    ``status.<field>``, ``note.<name>``); ``create_status`` is status written at create only.
    """

    kind: Kind
    record_kind: str  # the KIND_LABEL value and the object-name prefix
    record_type: type[R]
    key: Callable[[R], str]
    key_fields: Callable[[str], dict[str, Any]]
    slots: Mapping[str, Slot]
    also_owns: tuple[str, ...] = ()
    encode_more: Callable[[R, Parts[S, T]], None] | None = None
    decode_more: Callable[[dict[str, Any], Parts[S, T], Mapping[str, Any]], None] | None = None
    create_status: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        record_fields = {f.name for f in dataclasses.fields(self.record_type)}  # type: ignore[arg-type]
        for name, slot in self.slots.items():
            if name not in record_fields:
                raise TypeError(f"{self.record_type.__name__} has no field {name}")
            if slot.part != "note":
                self._wire(slot.part, slot.name)
        for owned in self.also_owns:
            part, _, name = owned.partition(".")
            if part not in ("spec", "status", "note"):
                raise TypeError(
                    f"{owned}: also_owns names spec.<field>, status.<field>, note.<name>"
                )
            if part != "note":
                self._wire(part, name)

    def _wire(self, part: str, name: str) -> str:
        cls = self.kind.spec_type if part == "spec" else self.kind.status_type
        for f in dataclasses.fields(cls):
            if f.name == name:
                return json_name(f)
        raise TypeError(f"{self.kind.kind} {part} has no field {name}")

    @property
    def plural(self) -> str:
        return self.kind.plural

    def owned(self, part: Literal["spec", "status", "note"]) -> frozenset[str]:
        """The keys of ``part`` a write replaces (or removes): its slots and ``also_owns``."""
        names = [s.name for s in self.slots.values() if s.part == part]
        names += [o.partition(".")[2] for o in self.also_owns if o.startswith(part + ".")]
        return frozenset(names if part == "note" else [self._wire(part, n) for n in names])

    # -- record to object ----------------------------------------------------------------

    def encode(self, rec: R) -> tuple[Obj, Obj, dict[str, str]]:
        """The record's (spec, status, notes) as JSON-ready data."""
        values: dict[str, dict[str, Any]] = {"spec": {}, "status": {}, "note": {}}
        for name, slot in self.slots.items():
            value = slot.conv.encode(getattr(rec, name))
            if value is not None:
                values[slot.part][slot.name] = value
        parts: Parts[S, T] = Parts(
            self.kind.spec_type(**values["spec"]),
            self.kind.status_type(**values["status"]),
            values["note"],
        )
        if self.encode_more is not None:
            self.encode_more(rec, parts)
        return to_wire(parts.spec), to_wire(parts.status), parts.notes

    def create_body(self, rec: R, namespace: str) -> Obj:
        """The object a create writes for ``rec``."""
        spec_, status_, notes = self.encode(rec)
        key = self.key(rec)
        annotations = {KEY_ANNOTATION: key, **{NOTE_PREFIX + k: v for k, v in notes.items()}}
        body: Obj = {
            "apiVersion": GROUP_VERSION,
            "kind": self.kind.kind,
            "metadata": {
                "name": object_name(self.record_kind, key),
                "namespace": namespace,
                "labels": {KIND_LABEL: self.record_kind},
                "annotations": annotations,
            },
            "spec": spec_,
        }
        status_ = {**status_, **self.create_status}
        if status_:
            body["status"] = status_
        return body

    # -- object to record ----------------------------------------------------------------

    def decode(self, obj: Mapping[str, Any], under: Mapping[str, Any] | None = None) -> R:
        """The record ``obj`` holds, the fields of ``under`` (a legacy record) filling what
        the object does not say; raises TypeError, ValueError, KeyError when it holds none."""
        meta = obj.get("metadata") or {}
        annotations: Mapping[str, str] = meta.get("annotations") or {}
        parts: Parts[S, T] = Parts(
            from_wire(self.kind.spec_type, obj.get("spec")),
            from_wire(self.kind.status_type, obj.get("status")),
            {
                k.removeprefix(NOTE_PREFIX): v
                for k, v in annotations.items()
                if k.startswith(NOTE_PREFIX) and isinstance(v, str)
            },
        )
        values: dict[str, Any] = dict(under or {})
        for name, slot in self.slots.items():
            if slot.part == "note":
                wire: Any = parts.notes.get(slot.name)
            else:
                wire = getattr(parts.spec if slot.part == "spec" else parts.status, slot.name)
            value = slot.conv.decode(wire)
            if value is not ABSENT:
                values[name] = value
        if self.decode_more is not None:
            self.decode_more(values, parts, meta)
        for name, slot in self.slots.items():
            if name not in values and slot.missing is not ABSENT:
                values[name] = slot.missing
        values.update(self.key_fields(annotations.get(KEY_ANNOTATION) or meta.get("name", "")))
        known = self._record_fields
        return self.record_type(**{k: v for k, v in values.items() if k in known})

    @functools.cached_property
    def _record_fields(self) -> frozenset[str]:
        return frozenset(f.name for f in dataclasses.fields(self.record_type))  # type: ignore[arg-type]
