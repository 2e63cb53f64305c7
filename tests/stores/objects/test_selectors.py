"""Label and field selectors match as the apiserver's do."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcoord.stores.objects.selectors import parse_fields, parse_labels
from agentcoord.stores.objects.statuserrors import BadRequest

pytestmark = pytest.mark.unit

LABELS = {"team": "a", "tier": "web", "app.kubernetes.io/name": "x"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("team=a", True),
        ("team==a", True),
        ("team=b", False),
        ("team!=b", True),
        ("missing!=b", True),
        ("team in (a,b)", True),
        ("team in (b, c)", False),
        ("team notin (b)", True),
        ("team notin (a)", False),
        ("missing notin (a)", True),
        ("team", True),
        ("missing", False),
        ("!missing", True),
        ("!team", False),
        ("team=a,tier=web", True),
        ("team=a, tier=db", False),
        ("app.kubernetes.io/name=x", True),
        ("team in (a),!missing,tier", True),
    ],
)
def test_label_selector(selector: str, matches: bool) -> None:
    """Each operator of the label selector grammar matches like Kubernetes."""
    assert parse_labels(selector).matches(LABELS) is matches


@pytest.mark.parametrize("bad", ["team=(", "=a", "team in ()", "a b"])
def test_label_selector_rejects_garbage(bad: str) -> None:
    """Malformed selectors are a 400, not a silent match-all."""
    with pytest.raises(BadRequest):
        parse_labels(bad)


def test_field_selector() -> None:
    """metadata.name/namespace with = and != filter; other fields are refused."""
    obj = {"metadata": {"name": "a", "namespace": "ns"}}
    assert parse_fields("metadata.name=a").matches(obj)
    assert not parse_fields("metadata.name!=a").matches(obj)
    assert parse_fields("metadata.namespace==ns,metadata.name=a").matches(obj)
    assert parse_fields("metadata.name=a").equal("metadata.name") == "a"
    with pytest.raises(BadRequest, match="field label not supported"):
        parse_fields("spec.profile=x")


_key = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
_val = st.from_regex(r"[a-z0-9]{1,5}", fullmatch=True)


@given(st.dictionaries(_key, _val, max_size=4), _key, _val)
def test_equality_and_inequality_are_complements(
    labels: dict[str, str], key: str, value: str
) -> None:
    """For any labels, `k=v` and `k!=v` never agree, and `k in (v)` equals `k=v`."""
    eq = parse_labels(f"{key}={value}").matches(labels)
    assert eq is not parse_labels(f"{key}!={value}").matches(labels)
    assert eq is parse_labels(f"{key} in ({value})").matches(labels)
    assert parse_labels(key).matches(labels) is not parse_labels(f"!{key}").matches(labels)
