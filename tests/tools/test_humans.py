"""escalate and the structured prompts, answered by the human from the CLI or straight on NATS."""

from __future__ import annotations

import asyncio
import getpass
import json
import time
from typing import Any

import nats
import pytest

from tests.conftest import Daemon
from tests.tools.conftest import ToolFailed, cli, human_call, nats_login


def _wait_prompt(daemon: Daemon) -> dict[str, Any]:
    """The one open prompt, as ``agentcoord prompts --json`` lists it (waits for it to appear)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = cli(daemon, "prompts", "--json")
        assert out.returncode == 0, out.stderr
        prompts = json.loads(out.stdout)["prompts"]
        if prompts:
            assert len(prompts) == 1
            return prompts[0]  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError("no prompt appeared")


def test_escalate_answered_from_cli(daemon: Daemon, agents: Any) -> None:
    """An agent's escalate returns the text the human typed in `agentcoord answer`."""
    a = agents("a")
    pending = a.start("escalate", question="Ship on Friday?", timeout_secs=120)
    prompt = _wait_prompt(daemon)
    assert (prompt["agent"], prompt["kind"]) == (a.name, "notify")
    listed = cli(daemon, "prompts")
    assert prompt["id"] in listed.stdout
    assert "Ship on Friday?" in listed.stdout
    out = cli(daemon, "answer", prompt["id"], "yes,", "after", "the", "freeze")
    assert out.returncode == 0, out.stderr
    assert a.result(pending) == {
        "prompt": prompt["id"],
        "answered": True,
        "answer": "yes, after the freeze",
    }
    again = cli(daemon, "answer", prompt["id"], "no")
    assert again.returncode == 1
    assert "already answered" in again.stderr
    assert json.loads(cli(daemon, "prompts", "--json").stdout)["prompts"] == []


def test_unanswered_prompt_stays_open(daemon: Daemon, agents: Any) -> None:
    """On timeout escalate says answered: false and the prompt stays open for a later answer."""
    a = agents("a")
    result = a.call("escalate", question="Anyone there?", timeout_secs=0.3)
    assert result["answered"] is False
    assert result["answer"] is None
    (prompt,) = human_call(daemon, "list_prompts")["prompts"]
    assert prompt["id"] == result["prompt"]
    assert prompt["phase"] == "Open"
    human_call(daemon, "answer_prompt", prompt=prompt["id"], answer="later")
    (done,) = human_call(daemon, "list_prompts", all=True)["prompts"]
    assert (done["phase"], done["answer"]) == ("Answered", "later")


def test_approval_answer_is_checked(daemon: Daemon, agents: Any) -> None:
    """request_approval takes yes/no words only; a bad answer leaves the prompt open."""
    a = agents("a")
    pending = a.start("request_approval", question="Delete the old bucket?", timeout_secs=120)
    prompt = _wait_prompt(daemon)
    assert prompt["schema"] == {"type": "boolean"}
    bad = cli(daemon, "answer", prompt["id"], "maybe")
    assert bad.returncode == 1
    assert "yes or no" in bad.stderr
    assert cli(daemon, "answer", prompt["id"], "deny").returncode == 0
    assert a.result(pending)["answer"] is False


def test_choice_answered_by_number(daemon: Daemon, agents: Any) -> None:
    """ask_choice accepts a choice's 1-based number and returns the choice itself."""
    a = agents("a")
    pending = a.start("ask_choice", question="DB?", choices="postgres,sqlite", timeout_secs=120)
    prompt = _wait_prompt(daemon)
    assert cli(daemon, "answer", prompt["id"], "2").returncode == 0
    assert a.result(pending)["answer"] == "sqlite"


def test_input_validated_against_schema(daemon: Daemon, agents: Any) -> None:
    """request_input answers must be JSON matching the agent's schema."""
    a = agents("a")
    schema = {
        "type": "object",
        "properties": {"port": {"type": "integer", "minimum": 1}},
        "required": ["port"],
    }
    pending = a.start("request_input", question="Port?", schema=schema, timeout_secs=120)
    prompt = _wait_prompt(daemon)
    bad = cli(daemon, "answer", prompt["id"], '{"port": 0}')
    assert bad.returncode == 1
    assert "the answer.port: 0 is less than the minimum of 1" in bad.stderr
    assert cli(daemon, "answer", prompt["id"], '{"port": 8080}').returncode == 0
    assert a.result(pending)["answer"] == {"port": 8080}


def test_escalate_options_raise_the_structured_prompts(daemon: Daemon, agents: Any) -> None:
    """escalate with approval or choices raises that kind of prompt, answered as it is; two
    options at once are refused and raise nothing."""
    a = agents("a")
    pending = a.start("escalate", question="Merge it?", approval=True, timeout_secs=120)
    prompt = _wait_prompt(daemon)
    assert (prompt["kind"], prompt["schema"]) == ("approval", {"type": "boolean"})
    assert cli(daemon, "answer", prompt["id"], "yes").returncode == 0
    assert a.result(pending)["answer"] is True
    pending = a.start("escalate", question="Queue?", choices=["nats", "redis"], timeout_secs=120)
    prompt = _wait_prompt(daemon)
    assert (prompt["kind"], prompt["choices"]) == ("choice", ["nats", "redis"])
    assert cli(daemon, "answer", prompt["id"], "1").returncode == 0
    assert a.result(pending)["answer"] == "nats"
    with pytest.raises(ToolFailed, match="give one of `approval`, `choices`, `schema`"):
        a.call("escalate", question="Both?", approval=True, choices=["a", "b"])
    assert human_call(daemon, "list_prompts")["prompts"] == []


def test_a_late_answer_reaches_the_askers_inbox_once(daemon: Daemon, agents: Any) -> None:
    """An answer given after escalate stopped waiting arrives in the asker's inbox, once, from
    the human, naming the prompt; one given while escalate waits is its result alone."""
    a = agents("a")
    late = a.call("escalate", question="Rename the module?", timeout_secs=0.3)
    assert late["answered"] is False
    assert cli(daemon, "answer", late["prompt"], "yes,", "go").returncode == 0
    (msg,) = a.call("inbox", wait_secs=60)["messages"]
    assert msg["from"] == f"human:{getpass.getuser()}"
    assert msg["correlation_id"] == late["prompt"]
    assert msg["text"] == (
        f"the human answered your prompt {late['prompt']} (Rename the module?): yes, go"
    )
    pending = a.start("escalate", question="Tag it?", timeout_secs=120)
    prompt = _wait_prompt(daemon)
    assert cli(daemon, "answer", prompt["id"], "no").returncode == 0
    assert a.result(pending)["answer"] == "no"
    assert a.call("inbox")["messages"] == []


def test_agents_cannot_answer_prompts(daemon: Daemon, agents: Any) -> None:
    """answer_prompt is the human's: an agent session is refused."""
    a, b = agents("a"), agents("b")
    a.call("escalate", question="q", timeout_secs=0.1)
    (prompt,) = b.call("list_prompts")["prompts"]
    with pytest.raises(ToolFailed, match="only the human"):
        b.call("answer_prompt", prompt=prompt["id"], answer="sure")


async def test_instant_answer_is_not_missed(daemon: Daemon, agents: Any) -> None:
    """An answer published on prompts.<id>.reply the instant the prompt exists is received.

    A direct NATS client answers as soon as the prompts.new announcement (published right after
    the record is created) arrives; a subscription made after the record would lose such answers.
    """
    from agentcoord.kernel import wire
    from agentcoord.proto.agent.v1 import agent_pb2 as pb

    a = agents("a")
    url, user, password = nats_login(daemon)
    nc = await nats.connect(url, user=user, password=password)
    answered: list[str] = []
    try:

        async def answer_now(msg: Any) -> None:
            event = json.loads(msg.data)
            reply = wire.make_message(sender="human:test", kind=pb.MESSAGE_TEXT, body=b"instant")
            prompt = event["prompt"]
            await nc.publish(f"prompts.{prompt}.reply", reply.SerializeToString())
            answered.append(prompt)

        await nc.subscribe("prompts.new", cb=answer_now)
        await nc.flush()
        for _ in range(5):
            result = await asyncio.to_thread(a.call, "escalate", question="now?", timeout_secs=60)
            assert result["answered"] is True
            assert result["answer"] == "instant"
    finally:
        await nc.close()
    assert len(answered) == 5


async def test_handoff_emits_handed_off(daemon: Daemon, agents: Any) -> None:
    """An accepted handoff publishes HANDED_OFF with the successor task and its lineage."""
    a, b = agents("a"), agents("b")
    url, user, password = nats_login(daemon)
    nc = await nats.connect(url, user=user, password=password)
    try:
        sub = await nc.subscribe("events.HANDED_OFF.>")
        await nc.flush()
        pending = a.start("handoff", to=b.name, task="ship it", timeout_secs=120)
        msgs = await asyncio.to_thread(b.call, "inbox", wait_secs=60)
        offer = msgs["messages"][0]["correlation_id"]
        await asyncio.to_thread(b.call, "answer_handoff", offer=offer, accept=True)
        event = json.loads((await sub.next_msg(60)).data)
    finally:
        await nc.close()
    assert event["type"] == "HANDED_OFF"
    data = event["data"]
    assert (event["agent"], data["to"], data["offer"]) == (a.name, b.name, offer)
    assert data["lineage"]["handedOffFrom"]["agent"] == a.name
    assert (await asyncio.to_thread(a.result, pending))["task"] == data["task"]
