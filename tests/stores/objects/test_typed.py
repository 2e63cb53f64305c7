"""A kind's typed spec and status are its one declaration: the wire codec derived from them
round-trips every field, reads absent, null and wrong-typed fields as None, and agrees with
the schema derived from the same classes (docs/store.md "Declaring a kind")."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

import pytest

from agentcoord.stores.objects.kinds import (
    KINDS,
    AgentProfileSpec,
    AgentRef,
    AgentTaskStatus,
    Checkpoint,
)
from agentcoord.stores.objects.schema import validate
from agentcoord.stores.objects.typed import date, from_wire, prop, schema_of, to_wire

pytestmark = pytest.mark.unit


def _example(cls: type) -> Any:
    """An instance of a part with every field set (nested parts and lists included)."""
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        (hint,) = [a for a in typing.get_args(hints[f.name]) if a is not type(None)]
        values[f.name] = _value(hint, f.name)
    return cls(**values)


def _value(hint: Any, name: str) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is str:
        enum = {"kind": "choice", "permission_mode": "plan", "phase": "Open"}
        return enum.get(name, "2026-01-01T00:00:00Z")
    if hint is int:
        return 3
    if hint is float:
        return 1.5
    if hint is bool:
        return False
    if origin is list:
        return [_value(args[0], name)]
    if origin is dict:
        return {"k": "v"}
    return _example(hint)


@pytest.mark.parametrize("plural", sorted(KINDS))
def test_every_field_survives_the_wire_and_the_schema(plural: str) -> None:
    """A kind's spec and status with every field set go to the wire and back unchanged, and
    that wire form passes Strict validation against the derived schema untouched."""
    kind = KINDS[plural]
    spec, status = _example(kind.spec_type), _example(kind.status_type)
    assert from_wire(kind.spec_type, to_wire(spec)) == spec
    assert from_wire(kind.status_type, to_wire(status)) == status
    obj = {"metadata": {"name": "x"}, "spec": to_wire(spec), "status": to_wire(status)}
    pruned, warnings = validate(kind, obj, "Strict")
    assert (pruned["spec"], pruned["status"], warnings) == (obj["spec"], obj["status"], [])


def test_none_is_omitted_and_names_are_camel_case() -> None:
    """None fields are left out, the others keep declaration order with camelCase names."""
    status = AgentTaskStatus(
        phase="Running", checkpoints=[Checkpoint(ref="sha256:1", created_at="t")]
    )
    assert to_wire(status) == {
        "phase": "Running",
        "checkpoints": [{"ref": "sha256:1", "createdAt": "t"}],
    }
    assert to_wire(AgentRef(kind="Agent", name="a")) == {"kind": "Agent", "name": "a"}


def test_absent_null_and_wrong_types_read_as_none() -> None:
    """A missing field, an explicit null and a value of the wrong type are all None; a bool
    is not an integer, an integer is a number, a map of strings keeps only strings."""
    got = from_wire(
        AgentProfileSpec,
        {
            "backend": None,
            "maxTurns": True,
            "maxBudgetUsd": 2,
            "network": "yes",
            "env": {"A": "1", "B": 2},
            "mcpServers": "not-a-list",
            "unknown": 1,
        },
    )
    assert got == AgentProfileSpec(max_budget_usd=2, env={"A": "1"})
    assert from_wire(AgentProfileSpec, "not an object") == AgentProfileSpec()


def test_a_part_must_declare_its_fields() -> None:
    """A field not declared with prop() or date(), or of a type with no OpenAPI form, or of
    two types, is an error when the schema is derived, not a silent guess."""

    @dataclass
    class Plain:
        name: str | None = None

    @dataclass
    class Odd:
        when: complex | None = prop()

    @dataclass
    class Two:
        either: str | int | None = date()

    for cls in (Plain, Odd, Two):
        with pytest.raises(TypeError):
            schema_of(cls)
