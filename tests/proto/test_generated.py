"""The checked-in agent.v1 Python matches proto/ and round-trips the wire format."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentcoord.kernel import wire
from agentcoord.proto.agent.v1 import agent_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]
CHECKED_IN = ROOT / "src" / "agentcoord" / "proto"


def test_generated_code_is_current(tmp_path: Path) -> None:
    """Regenerating from proto/*.proto gives byte-identical files to the checked-in ones."""
    pytest.importorskip("grpc_tools")
    subprocess.run([sys.executable, str(ROOT / "proto" / "gen.py"), str(tmp_path)], check=True)
    fresh = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*_pb2.py*"))
    assert fresh, "protoc generated nothing"
    for rel in fresh:
        assert (CHECKED_IN / rel).read_bytes() == (tmp_path / rel).read_bytes(), (
            f"{rel} is stale: run python proto/gen.py"
        )
    checked_in = sorted(p.relative_to(CHECKED_IN) for p in CHECKED_IN.rglob("*_pb2.py*"))
    assert checked_in == fresh


@pytest.mark.unit
def test_offer_round_trips() -> None:
    """An OFFER carrying a HandoffContext decodes to the same document."""
    ctx = wire.handoff_context(task="t", decisions=["JWT"], next_steps=["a", "b"])
    msg = wire.make_message(
        sender="a-1", kind=pb.MESSAGE_OFFER, body=ctx.SerializeToString(), to="b-1"
    )
    view = wire.message_view(wire.decode(msg.SerializeToString()), seq=7)
    assert view["seq"] == 7
    assert (view["from"], view["to"], view["kind"]) == ("a-1", "b-1", "offer")
    assert view["handoff"]["decisions"] == ["JWT"]
    assert view["handoff"]["next_steps"] == ["a", "b"]


@pytest.mark.unit
def test_kind_names() -> None:
    """Kinds parse from tool names and enum names; anything else is refused."""
    assert wire.parse_kind("TEXT") == pb.MESSAGE_TEXT
    assert wire.parse_kind("message_accept") == pb.MESSAGE_ACCEPT
    with pytest.raises(Exception, match="unknown kind"):
        wire.parse_kind("unspecified")
    with pytest.raises(ValueError, match=r"not an agent\.v1"):
        wire.decode(b"\xff\xff\xff")
