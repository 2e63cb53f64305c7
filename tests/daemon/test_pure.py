"""Unit tests of the daemon's pure parts: JSON-RPC framing, origin rules (the ancestry rules are
tests/identity's)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcoord.errors import ProtocolError
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
