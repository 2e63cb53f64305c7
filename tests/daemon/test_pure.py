"""Unit tests of the daemon's pure parts: JSON-RPC framing, origin rules, ancestry decisions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcoord.errors import ProtocolError
from agentcoord.kernel.ancestry import ProcInfo, decide, is_claude_process, session_agent_stem
from agentcoord.kernel.framing import OVERSIZE, LineSplitter
from agentcoord.kernel.jsonrpc import Notification, Request, decode, error_response, parse_message
from agentcoord.mcp.origin import host_allowed, origin_allowed

pytestmark = pytest.mark.unit


def test_parse_request_and_notification() -> None:
    """A message with an id is a Request; without one a Notification; a response is ignored."""
    assert parse_message({"jsonrpc": "2.0", "id": 3, "method": "ping"}) == Request(3, "ping", {})
    assert parse_message({"jsonrpc": "2.0", "method": "n"}) == Notification("n", {})
    assert parse_message({"jsonrpc": "2.0", "id": 3, "result": {}}) is None


@pytest.mark.parametrize("params", [[], "x", 5, {"k": "\ud800"}])
def test_a_notification_with_unusable_params_is_never_answered(params: object) -> None:
    """A notification whose params are not an object (or hold a lone surrogate) is dropped,
    not answered with an error: notifications get no reply (JSON-RPC 2.0 section 4.1); the
    same params on a request are -32602."""
    assert parse_message({"jsonrpc": "2.0", "method": "notifications/x", "params": params}) is None
    with pytest.raises(ProtocolError) as info:
        parse_message({"jsonrpc": "2.0", "id": 1, "method": "x", "params": params})
    assert info.value.code == -32602


def test_invalid_request_keeps_salvageable_id() -> None:
    """A request with a good id but a bad method is answered with that id."""
    with pytest.raises(ProtocolError) as info:
        parse_message({"jsonrpc": "2.0", "id": "x", "method": 5})
    assert error_response(None, info.value)["id"] == "x"
    assert error_response(None, info.value)["error"]["code"] == -32600


@pytest.mark.parametrize("raw", [b"[" * 100_000, b"1" * 5000, b"\xff", b"{"])
def test_decode_failures_are_parse_errors(raw: bytes) -> None:
    """Deep nesting, huge ints, bad UTF-8 and truncation all map to -32700."""
    with pytest.raises(ProtocolError) as info:
        decode(raw)
    assert info.value.code == -32700


@given(
    st.lists(st.binary(max_size=50).map(lambda b: b.replace(b"\n", b"")), max_size=20),
    st.integers(1, 64),
)
def test_line_splitter_reassembles_any_chunking(lines: list[bytes], cut: int) -> None:
    """However the stream is chunked, the splitter yields the same non-blank lines."""
    stream = b"".join(line + b"\n" for line in lines)
    splitter = LineSplitter(limit=1000)
    got: list[object] = []
    for i in range(0, len(stream), cut):
        got.extend(splitter.feed(stream[i : i + cut]))
    assert got == [line for line in lines if line.strip()]


def test_line_splitter_skips_oversize_line_once() -> None:
    """An oversize line yields one OVERSIZE marker and the stream resynchronises after it."""
    splitter = LineSplitter(limit=10)
    out = splitter.feed(b"x" * 25) + splitter.feed(b"y" * 25 + b"\nok\n")
    assert out == [OVERSIZE, b"ok"]


@pytest.mark.parametrize(
    ("origin", "ok"),
    [
        (None, True),
        ("http://localhost:3000", True),
        ("http://127.0.0.1", True),
        ("https://[::1]:8443", True),
        ("http://evil.com", False),
        ("http://localhost.evil.com", False),
        ("null", False),
        ("file://", False),
        ("http://localhost:99999999", False),
    ],
)
def test_origin_rules(origin: str | None, ok: bool) -> None:
    """Only loopback http(s) origins are allowed."""
    assert origin_allowed(origin) is ok


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        (None, True),
        ("127.0.0.1:7420", True),
        ("localhost", True),
        ("[::1]:1", True),
        ("evil:80", False),
    ],
)
def test_host_rules(host: str | None, ok: bool) -> None:
    """Only loopback Host headers are allowed (DNS rebinding)."""
    assert host_allowed(host) is ok


def _p(pid: int, name: str, argv0: str = "", exe: str = "") -> ProcInfo:
    return ProcInfo(
        pid=pid, create_time=float(pid), name=name, argv0=argv0, exe=exe, cwd=f"/w/{pid}"
    )


def test_claude_process_recognised_by_name_argv_or_native_path() -> None:
    """claude is matched by process name, argv[0] basename, or the native install path."""
    assert is_claude_process(_p(1, "claude"))
    assert is_claude_process(_p(1, "node", argv0="/usr/lib/node_modules/.bin/claude"))
    assert is_claude_process(_p(1, "2.1.0", exe="/home/u/.local/share/claude/versions/2.1.0"))
    assert not is_claude_process(_p(1, "claudette"))


def test_nearest_runner_or_claude_wins() -> None:
    """The walk stops at the nearest runner or claude; a recycled pid is not a runner."""
    chain = [_p(10, "python"), _p(9, "sh"), _p(8, "claude"), _p(1, "init")]
    assert decide(chain, {}).kind == "session"
    assert decide(chain, {}).proc == chain[2]
    assert decide(chain, {(9, 9.0): "runner"}).kind == "runner"
    assert decide(chain, {(9, 1234.0): "runner"}).kind == "session"  # same pid, other start
    assert decide([_p(5, "bash"), _p(1, "init")], {}).kind == "none"


@pytest.mark.parametrize(
    ("cwd", "stem"),
    [("/w/My Project", "my-project"), ("/", "session"), (None, "session"), ("/a/__", "session")],
)
def test_session_agent_stem(cwd: str | None, stem: str) -> None:
    """Session agent names derive a DNS-label-safe stem from the cwd."""
    assert session_agent_stem(cwd) == stem


def test_tune_gc_freezes_start_up_objects_and_raises_gen0() -> None:
    """After start the daemon freezes what start-up built and collects young objects less often."""
    import gc

    from agentcoord.daemon.run import _GC_GEN0, _tune_gc

    before = gc.get_threshold()
    try:
        _tune_gc()
        assert gc.get_threshold()[0] == _GC_GEN0 > before[0]
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
