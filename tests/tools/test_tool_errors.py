"""The MCP core is the one place an error becomes what the model reads: a store's or a
service's domain error (errors.py's DomainError) is an ``isError`` result with exactly its
text, whatever layer raised it; anything else is an internal error naming only its type."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentcoord.errors import DomainError, InvalidArguments
from agentcoord.kernel.caller import Caller
from agentcoord.mcp.core import McpCore, McpSession
from agentcoord.stores.kv import ClaimPolicy, Holder, NotHolder
from agentcoord.stores.kv import _claimrules as rules
from agentcoord.stores.kv._claimrules import ClaimRecord
from agentcoord.stores.objects import Conflict
from agentcoord.tools.base import obj_schema, tool, tools_of
from agentcoord.tools.registry import ToolRegistry

pytestmark = pytest.mark.unit

RUNNER = Caller(kind="runner", agent="bob", via="unix")


class _Failing:
    """Tools that fail the way stores and services do."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    @tool(description="Fails.", schema=obj_schema(n={"type": "integer"}))
    async def fail(self, caller: Caller, args: dict[str, Any]) -> dict[str, Any]:
        raise self.error


class _Unused:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the core used {name}")


def _call(error: BaseException, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    u: Any = _Unused()
    core = McpCore(ToolRegistry(tools_of(_Failing(error))), u, u, u, leases=u)
    msg = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "fail", "arguments": arguments or {}},
    }
    reply = asyncio.run(core.handle_message(msg, McpSession(caller=RUNNER)))
    assert reply is not None
    result: dict[str, Any] = reply["result"]
    return result


def _text(result: dict[str, Any]) -> str:
    assert result["isError"] is True
    assert "structuredContent" not in result
    (content,) = result["content"]
    text: str = content["text"]
    return text


def test_a_claim_stores_refusal_reaches_the_model_as_its_text() -> None:
    """The claim rules' NotHolder (bob releasing alice's claim), raised where the claim store
    raises it, is the result's text word for word."""
    alice = Holder(agent="alice", mode="write", ttl=60, acquired=0, expires=9e9, token=3)
    record = ClaimRecord(key="deploy:prod", holders=(alice,))
    with pytest.raises(NotHolder) as refused:
        rules.release(record, "deploy:prod", "bob", None, 1.0, ClaimPolicy())
    assert _text(_call(refused.value)) == "claim on deploy:prod is held by alice, not bob"


@pytest.mark.parametrize(
    "error",
    [
        InvalidArguments("`ttl` must be positive"),
        DomainError("prompt p-1 is already answered"),
    ],
)
def test_a_domain_error_is_its_text(error: DomainError) -> None:
    """Any DomainError a handler lets through becomes an isError result of its text."""
    assert _text(_call(error)) == str(error)


def test_an_argument_the_schema_refuses_never_reaches_the_handler() -> None:
    """The argument check's InvalidArguments is translated the same way, before the call."""
    assert _text(_call(AssertionError("called"), {"n": "x"})) == "`n` must be an integer"


@pytest.mark.parametrize("error", [ValueError("secret detail"), Conflict("stale")])
def test_any_other_error_is_an_internal_error_naming_its_type(error: Exception) -> None:
    """A bug, or a store error that is not a domain error, tells the model only its type."""
    assert _text(_call(error)) == f"internal error in fail: {type(error).__name__}"
