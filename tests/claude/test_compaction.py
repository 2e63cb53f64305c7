"""The real Claude Code compacts a conversation (``/compact`` on ``-p``'s stream-json input) in
the process that holds a claim: its SessionStart hook (source ``compact``) tells the model
again who it is, the claim with its expiry, its focus and the waiting messages, and the next
model request carries it (docs/claude-code.md "After compaction or /clear")."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Any

from tests.claude.conftest import NO_NATIVE_INBOX, SERVER, Claude
from tests.claude.model_api import Request, Text, ToolUse, context_texts, tool_results
from tests.conftest import Daemon
from tests.tools.session_helpers import own_call

# Claude Code asks the model for the summary with this instruction (seen with 2.1.328).
_SUMMARY_ASK = "CRITICAL: Respond with TEXT ONLY"


def _last_user_text(req: Request) -> str:
    content = req.body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))


def _answer(req: Request) -> Text:
    """The model's turn: a summary when Claude Code compacts, else a short answer."""
    if _SUMMARY_ASK in _last_user_text(req):
        return Text("<summary>The user asked to hold the deploy lock; it is held.</summary>")
    return Text("ok")


def _turns(proc: subprocess.Popen[str], prompts: list[str]) -> Iterator[dict[str, Any]]:
    """Send each prompt as a stream-json user message once the previous one has its result
    line; yields every output line."""
    assert proc.stdin is not None
    assert proc.stdout is not None
    for prompt in prompts:
        message = {"type": "user", "message": {"role": "user", "content": prompt}}
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        for line in proc.stdout:
            event = json.loads(line)
            yield event
            if event.get("type") == "result":
                break


def test_after_compact_the_model_is_told_its_claims_focus_and_inbox_again(
    daemon: Daemon, claude: Claude
) -> None:
    """A session annotates its focus and claims a lock, gets a message, then compacts: the
    SessionStart:compact hook's answer (Claude Code's own hook_response) and the first model
    request after the compaction name the same agent, the lock with its expiry, the focus and
    one waiting message."""
    # Without a native inbox the message waits (with one it would be delivered at once:
    # docs/claude-code.md "The native inbox").
    claude.env[NO_NATIVE_INBOX] = "0"
    claude.api.script(
        ToolUse(f"mcp__{SERVER}__annotate", {"intent": "shipping the release"}),
        ToolUse(f"mcp__{SERVER}__claim", {"resource_key": "deploy-lock", "ttl": "10m"}),
        *[_answer] * 6,
    )
    argv = claude.argv("", "--input-format", "stream-json", "--verbose")
    argv.remove("")  # the prompts come on stdin
    argv[argv.index("--output-format") + 1] = "stream-json"
    proc = subprocess.Popen(
        argv,
        env=claude.env,
        cwd=claude.cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    events: list[dict[str, Any]] = []
    try:
        events += _turns(proc, ["hold the deploy lock while we ship"])
        claimed = json.loads(tool_results(claude.api.requests[2])[-1]["text"])
        assert claimed["acquired"] is True, claimed
        me = claimed["claim"]["agent"]
        sent = own_call(daemon, "send", {"to": me, "text": "the release notes are ready"})
        assert not sent["isError"], sent
        seen = len(claude.api.requests)
        events += _turns(proc, ["/compact", "go on"])
    finally:
        _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    hook = [
        e
        for e in events
        if e.get("subtype") == "hook_response" and e.get("hook_name") == "SessionStart:compact"
    ]
    assert len(hook) == 1, [e.get("hook_name") for e in events if "hook_name" in e]
    said = json.loads(hook[0]["output"])["hookSpecificOutput"]["additionalContext"]
    after = [r for r in claude.api.requests[seen:] if _SUMMARY_ASK not in _last_user_text(r)]
    assert after, "no model request after the compaction"
    (context,) = [t for t in context_texts(after[0], "SessionStart") if "compacted" in t]
    for text in (said, context):
        assert f"you are still agent `{me}`" in text, text
        assert re.search(
            r"- write deploy-lock: expires \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+ \(in \d+m", text
        ), text
        assert "- your focus: shipping the release" in text, text
        assert "- messages waiting in your inbox: 1 (read them with inbox)" in text, text
