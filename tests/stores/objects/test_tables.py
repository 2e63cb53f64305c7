"""Table responses: columns per kind and Age rendered like kubectl's HumanDuration."""

from __future__ import annotations

import pytest

from agentcoord.stores.objects.kinds import KINDS
from agentcoord.stores.objects.tables import human_duration, table, wants_table
from agentcoord.stores.objects.writerules import rfc3339

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (150, "2m30s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60, "3h1m"),
        (8 * 3600, "8h"),
        (47 * 3600, "47h"),
        (49 * 3600, "2d1h"),
        (10 * 86400, "10d"),
        (800 * 86400, "2y70d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: int, text: str) -> None:
    """Ages print exactly as Kubernetes' duration.HumanDuration prints them."""
    assert human_duration(seconds) == text


def test_agent_table_columns_and_age() -> None:
    """Agent rows show NAME, PHASE, PROFILE, FOCUS and a server-rendered AGE."""
    now = 1_800_000_000.0
    obj = {
        "metadata": {"name": "a", "creationTimestamp": rfc3339(now - 150)},
        "spec": {"profile": "coder"},
        "status": {"phase": "Running", "focus": "tests"},
    }
    t = table(KINDS["agents"], [obj], 9, now=now)
    names = [c["name"] for c in t["columnDefinitions"]]
    assert names[:5] == ["Name", "Phase", "Profile", "Focus", "Age"]
    assert t["rows"][0]["cells"][:5] == ["a", "Running", "coder", "tests", "2m30s"]
    assert t["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert t["metadata"]["resourceVersion"] == "9"


def test_wants_table() -> None:
    """Only a first-choice meta.k8s.io Table media type asks for a Table."""
    assert wants_table("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    assert not wants_table("application/json")
    assert not wants_table("application/json, application/json;as=Table;v=v1;g=meta.k8s.io")
