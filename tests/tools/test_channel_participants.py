"""AgentChannel participants edited with the real kubectl take effect on the real daemon
(docs/messaging.md "Channels": routing follows the record)."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from tests.conftest import Daemon, write_kubeconfig
from tests.stores.objects.conftest import Kubectl
from tests.tools.conftest import ToolFailed

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="needs kubectl")


def _kubectl(daemon: Daemon) -> Kubectl:
    return Kubectl(daemon, write_kubeconfig(daemon), daemon.root / "kube-cache")


@pytest.mark.parametrize("confirm", [False, True], ids=["ack-on-read", "after"])
def test_participant_added_with_kubectl_reads_later_posts(
    daemon: Daemon, agents: Any, confirm: bool
) -> None:
    """After `kubectl patch` adds an agent to spec.participants, it reads the next channel post
    (and no post from before it joined, either way of reading), and may post itself."""
    a, b, c = agents("a"), agents("b"), agents("c")
    c.call("inbox")  # c has an inbox consumer already, without the channel on it
    a.call("open_channel", name="review", participants=[b.name])
    a.call("send", channel="review", text="before")
    kubectl = _kubectl(daemon)
    patch = {"spec": {"participants": [a.name, b.name, c.name]}}
    kubectl("patch", "agentchannel", "review", "--type=merge", "-p", json.dumps(patch))
    doc = json.loads(kubectl("get", "agentchannel", "review", "-o", "json").stdout)
    assert doc["spec"]["participants"] == [a.name, b.name, c.name]
    a.call("send", channel="review", text="after")
    got = c.call("inbox", wait_secs=5, **({"after": 0} if confirm else {}))["messages"]
    assert [(m["channel"], m["from"], m["text"]) for m in got] == [("review", a.name, "after")]
    c.call("send", channel="review", text="thanks")
    assert [m["text"] for m in b.call("inbox")["messages"]] == ["before", "after", "thanks"]


def test_participant_removed_with_kubectl_gets_no_later_posts(daemon: Daemon, agents: Any) -> None:
    """An agent `kubectl patch` takes out of spec.participants gets no later post, and can no
    longer post or close the channel."""
    a, b, c = agents("a"), agents("b"), agents("c")
    a.call("open_channel", name="pair", participants=[b.name, c.name])
    a.call("send", channel="pair", text="before")
    kubectl = _kubectl(daemon)
    patch = {"spec": {"participants": [a.name, c.name]}}
    kubectl("patch", "agentchannel", "pair", "--type=merge", "-p", json.dumps(patch))
    a.call("send", channel="pair", text="after")
    assert [m["text"] for m in c.call("inbox")["messages"]] == ["before", "after"]
    assert [m["text"] for m in b.call("inbox")["messages"]] == ["before"]
    with pytest.raises(ToolFailed, match="not a participant"):
        b.call("send", channel="pair", text="still here?")
    with pytest.raises(ToolFailed, match="not a participant"):
        b.call("close_channel", name="pair")


def test_a_participant_no_inbox_can_have_does_not_stop_posts(daemon: Daemon, agents: Any) -> None:
    """A kubectl-edited participant that is not an agent id is skipped; the rest get the post."""
    a, b = agents("a"), agents("b")
    a.call("open_channel", name="mixed", participants=[b.name])
    patch = {"spec": {"participants": [a.name, "not an id", b.name]}}
    _kubectl(daemon)("patch", "agentchannel", "mixed", "--type=merge", "-p", json.dumps(patch))
    assert a.call("send", channel="mixed", text="hello")["sent"] is True
    assert [m["text"] for m in b.call("inbox")["messages"]] == ["hello"]
