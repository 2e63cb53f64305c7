"""Objects are validated against their OpenAPI schema; unknown fields obey fieldValidation."""

from __future__ import annotations

import pytest

from agentcoord.stores.objects.kinds import KINDS, kind_for
from agentcoord.stores.objects.schema import check_object, validate
from agentcoord.stores.objects.statuserrors import BadRequest, Invalid

pytestmark = pytest.mark.unit

AGENT = KINDS["agents"]


def test_strict_rejects_unknown_fields() -> None:
    """Strict names every unknown field, in spec and in metadata."""
    obj = {"metadata": {"name": "a", "bogus": 1}, "spec": {"profile": "p", "nope": True}}
    with pytest.raises(BadRequest) as err:
        validate(AGENT, obj, "Strict")
    assert 'unknown field "spec.nope"' in str(err.value)
    assert 'unknown field "metadata.bogus"' in str(err.value)


def test_warn_prunes_and_warns_ignore_prunes() -> None:
    """Warn drops unknown fields with a warning; Ignore drops them silently."""
    obj = {"metadata": {"name": "a"}, "spec": {"profile": "p", "nope": True}}
    pruned, warns = validate(AGENT, obj, "Warn")
    assert pruned["spec"] == {"profile": "p"}
    assert warns == ['unknown field "spec.nope"']
    pruned, warns = validate(AGENT, obj, "Ignore")
    assert pruned["spec"] == {"profile": "p"}
    assert warns == []


def test_types_enum_required_min_items() -> None:
    """Wrong types, enum misses, missing required fields and minItems are 422 with causes."""
    channel = KINDS["agentchannels"]
    bad = {"metadata": {"name": "c"}, "spec": {"participants": [], "ttl": 5}}
    with pytest.raises(Invalid) as err:
        validate(channel, bad)
    fields = {f for f, _ in err.value.causes}
    assert fields == {"spec.participants", "spec.ttl"}
    with pytest.raises(Invalid, match="Unsupported value"):
        validate(KINDS["humanprompts"], {"metadata": {"name": "p"}, "spec": {"kind": "shout"}})
    with pytest.raises(Invalid, match="Required value"):
        validate(KINDS["agenttasks"], {"metadata": {"name": "t"}, "spec": {}})


def test_free_form_fields_keep_unknown_content() -> None:
    """meridianSpec and responseSchema keep whatever they hold."""
    prompt = {
        "metadata": {"name": "p"},
        "spec": {"kind": "notify", "meridianSpec": {"anything": {"goes": [1]}}},
    }
    pruned, _ = validate(KINDS["humanprompts"], prompt, "Strict")
    assert pruned["spec"]["meridianSpec"] == {"anything": {"goes": [1]}}


def test_labels_and_names_are_checked() -> None:
    """Bad label values and non-DNS names are 422."""
    with pytest.raises(Invalid, match="invalid label"):
        validate(AGENT, {"metadata": {"name": "a", "labels": {"k": "has space"}}, "spec": {}})
    with pytest.raises(Invalid, match="RFC 1123"):
        check_object(AGENT, {"metadata": {"name": "Bad_Name"}})


def test_kind_lookup() -> None:
    """Plural, singular, kind and short names all find the kind."""
    assert kind_for("ag") is kind_for("Agent") is kind_for("agents") is AGENT
    assert kind_for("nothing") is None
