"""Messages are audited without their text (docs/messaging.md "Audit"): a direct message, a
channel open, a post, a broadcast and a close each leave one event naming who, to whom, the
kind and the length, rendered as the CLI renders every event; a retried send is audited once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import Daemon, cli_json
from tests.tools.conftest import AgentProc

SECRET = "hunter2-the-staging-password"


def test_messages_are_audited_without_their_text(
    daemon: Daemon, claude_bin: Path, tmp_path: Path
) -> None:
    """send, open_channel, a channel post, broadcast and close_channel are each one event with
    their details; no event holds a message's text or the channel's topic; a send retried
    with the same key is one event."""
    a = AgentProc(daemon, claude_bin, tmp_path / "a")
    b = AgentProc(daemon, claude_bin, tmp_path / "b")
    try:
        a.call("send", to=b.name, text=f"the password is {SECRET}", idempotency_key="k1")
        a.call("send", to=b.name, text=f"the password is {SECRET}", idempotency_key="k1")  # a retry
        a.call("open_channel", name="release", participants=[b.name], topic=f"topic {SECRET}")
        a.call("send", channel="release", text=f"posting {SECRET}")
        a.call("broadcast", text=f"everyone: {SECRET}")
        a.call("close_channel", name="release")
    finally:
        a.close()
        b.close()
    events = cli_json(daemon, "audit", "--agent", a.name, "--limit", "500")["events"]
    assert SECRET not in json.dumps(events)
    by_type: dict[str, list[dict[str, object]]] = {}
    for e in events:
        by_type.setdefault(e["type"], []).append(e)
    [sent] = by_type["MESSAGE_SENT"]
    length = len(f"the password is {SECRET}")
    assert (sent["to"], sent["kind"], sent["chars"]) == (b.name, "text", length)
    assert sent["delivery"] in ("delivered", "queued")
    [opened] = by_type["CHANNEL_OPENED"]
    assert (opened["channel"], opened["participants"]) == ("release", [b.name])
    [posted] = by_type["CHANNEL_POSTED"]
    assert (posted["channel"], posted["chars"]) == ("release", len(f"posting {SECRET}"))
    [broadcast] = by_type["BROADCAST_SENT"]
    assert broadcast["chars"] == len(f"everyone: {SECRET}")
    [closed] = by_type["CHANNEL_CLOSED"]
    assert closed["channel"] == "release"
    # The CLI's line for the send names both ends and the length, in the one rendering.
    text = subprocess.run(
        [sys.executable, "-m", "agentcoord", "audit", "--type", "MESSAGE_SENT"],
        env=daemon.env,
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    ).stdout
    assert f"MESSAGE_SENT  {a.name}  to={b.name} kind=text delivery=" in text
    assert f"chars={length}" in text
