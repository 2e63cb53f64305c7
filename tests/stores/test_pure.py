"""Pure parts of the claim plane: durations, key escaping, modes and grant rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcoord.errors import InvalidArguments
from agentcoord.stores.kv import (
    ClaimPolicy,
    ClaimRecord,
    Contention,
    Holder,
    escape_key,
    format_duration,
    parse_duration,
    parse_mode,
    unescape_key,
)
from agentcoord.stores.kv import _claimrules as rules
from agentcoord.stores.kv._claimrules import (
    NotHolder,
    StaleToken,
    compatible,
    due_reason,
    grant,
    wire_ttl,
)
from agentcoord.stores.kv._natskv import is_absent
from agentcoord.stores.kv.focus import Focus, by_recency, rank
from agentcoord.stores.kv.keys import MAX_KEY_CHARS

pytestmark = pytest.mark.unit

POLICY = ClaimPolicy(default_ttl=60, max_ttl=600, max_age=1000, heartbeat_grace=120)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("5m", 300),
        ("1h", 3600),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("2m30s", 150),
        ("250ms", 0.25),
        ("0", 0),
        ("+1m", 60),
        (".5s", 0.5),
        ("1h0m0.5s", 3600.5),
        ("3us", 3e-6),
        ("7µs", 7e-6),
        ("9ns", 9e-9),
    ],
)
def test_parse_duration_go_forms(text: str, seconds: float) -> None:
    """Every Go time.ParseDuration form parses to the right number of seconds."""
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text", ["", "5", "5x", "m", "1h 30m", "1h-5m", ".", "five minutes", "--1s"]
)
def test_parse_duration_rejects_bad_values(text: str) -> None:
    """A malformed duration is an error, never a silent "no expiry" (docs/claims.md "Rules")."""
    with pytest.raises(InvalidArguments, match="invalid duration"):
        parse_duration(text)


def test_parse_duration_negative_keeps_sign() -> None:
    """A negative duration parses negative, so the caller can refuse it."""
    assert parse_duration("-90s") == -90


def test_format_duration_round_trips_whole_seconds() -> None:
    """format_duration renders Go style and parses back to the same value."""
    for seconds in (1, 59, 60, 90, 3600, 5400, 86399):
        assert parse_duration(format_duration(seconds)) == seconds
    assert format_duration(5400) == "1h30m"


@given(st.text(min_size=1, max_size=200))
def test_escape_round_trips(key: str) -> None:
    """unescape_key(escape_key(k)) == k for any text, and the result is a valid KV key."""
    esc = escape_key(key)
    assert unescape_key(esc) == key
    assert all(c.isascii() and (c.isalnum() or c in "_/-=") for c in esc)
    assert not esc.startswith(".")
    assert not esc.endswith(".")


@given(st.text(min_size=1, max_size=60), st.text(min_size=1, max_size=60))
def test_escape_is_injective(a: str, b: str) -> None:
    """Two different keys never map to one KV key (so never share a lease)."""
    if a != b:
        assert escape_key(a) != escape_key(b)


def test_escape_seed_collision_is_gone() -> None:
    """A pair a lossy escape would collide (file:a/b vs file_a/b) gets two different KV keys."""
    assert escape_key("file:aion/web:src/auth.rs") != escape_key("file_aion/web_src/auth.rs")
    assert escape_key("file:aion/web:src/auth.rs") == "file=3Aaion/web=3Asrc/auth=2Ers"


def test_escape_rejects_empty_and_long_keys() -> None:
    """An empty or over-long resource key is an argument error."""
    with pytest.raises(InvalidArguments, match="required"):
        escape_key("")
    with pytest.raises(InvalidArguments, match="longer"):
        escape_key("x" * (MAX_KEY_CHARS + 1))


def test_parse_mode_rejects_typos() -> None:
    """write/read/intent parse (any case); a typo is an error, not a silent read."""
    assert parse_mode("Write") == "write"
    assert parse_mode(" intent ") == "intent"
    with pytest.raises(InvalidArguments, match="mode"):
        parse_mode("wrte")


def test_compatibility_matrix() -> None:
    """write excludes write and read; reads share; intent never blocks nor is blocked."""
    assert not compatible("write", "write")
    assert not compatible("write", "read")
    assert not compatible("read", "write")
    assert compatible("read", "read")
    for mode in ("write", "read", "intent"):
        assert compatible("intent", mode)
        assert compatible(mode, "intent")


def _h(agent: str, mode: str = "write", now: float = 0, ttl: float = 60, **kw: object) -> Holder:
    return Holder(agent=agent, mode=mode, ttl=ttl, acquired=now, expires=now + ttl, **kw)  # type: ignore[arg-type]


def test_grant_contention_names_the_holder() -> None:
    """A write against a live write holder is contention carrying that holder."""
    cur = ClaimRecord("k", (_h("a", token=5),))
    out = grant(cur, "k", _h("b", now=1), 1, POLICY)
    assert isinstance(out, Contention)
    assert out.holder.agent == "a"


def test_grant_reads_share_and_expired_holders_drop() -> None:
    """A read joins a read; an expired write holder is dropped with reason expired."""
    cur = ClaimRecord("k", (_h("a", "read", token=3),))
    out = grant(cur, "k", _h("b", "read", now=1), 1, POLICY)
    assert not isinstance(out, Contention)
    assert [h.agent for h in out[0].holders] == ["a", "b"]
    stale = ClaimRecord("k", (_h("a", token=3, ttl=10),))
    out2 = grant(stale, "k", _h("b", now=11), 11, POLICY)
    assert not isinstance(out2, Contention)
    assert out2[1][0][1] == "expired"


def test_tokens_fill_from_revision_only_for_new_holders() -> None:
    """with_tokens gives the new holder the write's revision and keeps older tokens."""
    rec = ClaimRecord("k", (_h("a", "read", token=3), _h("b", "read"))).with_tokens(9)
    assert [h.token for h in rec.holders] == [3, 9]
    assert ClaimRecord.decode(rec.encode()) == rec


def test_claim_encoding_is_compact_and_decoded_records_share_strings() -> None:
    """A record encodes without empty fields and decodes back equal; decoded holders share
    one string per agent, mode and host (the claims view holds thousands of them)."""
    rec = ClaimRecord("k", (Holder("agent-a", "write", 5.0, 1.0, 6.0, token=2, host="h1"),))
    data = rec.encode()
    assert data == (
        b'{"key":"k","holders":[{"agent":"agent-a","mode":"write","ttl":5.0,"acquired":1.0,'
        b'"expires":6.0,"token":2,"host":"h1"}]}'
    )
    one, two = ClaimRecord.decode(data), ClaimRecord.decode(bytes(data))
    assert one == rec
    assert one.holders[0].agent is two.holders[0].agent
    assert one.holders[0].host is two.holders[0].host


def test_due_reasons_in_order() -> None:
    """max-age beats heartbeat-lost beats expired; a fresh holder is not due."""
    h = _h("a", ttl=600, heartbeat=0.0)
    assert due_reason(h, 10, POLICY) is None
    assert due_reason(h, 121, POLICY) == "heartbeat-lost"
    assert due_reason(_h("a", ttl=60), 61, POLICY) == "expired"
    assert due_reason(_h("a", ttl=600), 1000, POLICY) == "max-age"


def test_wire_ttl_is_whole_seconds_at_least_one() -> None:
    """Per-key TTLs round up to whole seconds and never reach zero."""
    assert wire_ttl(0.2) == 1
    assert wire_ttl(1.0) == 1
    assert wire_ttl(1.2) == 2


def test_is_absent_recognises_markers() -> None:
    """Delete, purge and server limit markers all read as "no value"."""
    assert is_absent({"KV-Operation": "DEL"})
    assert is_absent({"Nats-Marker-Reason": "MaxAge"})
    assert not is_absent({"Nats-TTL": "5"})
    assert not is_absent(None)


def test_rank_orders_and_bounds() -> None:
    """Exact tags outrank substrings and free text; results are bounded by limit."""
    recs = by_recency(
        [
            Focus.make("a", intent="refactor the auth flow", updated=1),
            Focus.make("b", files=("src/auth.rs",), updated=2),
            Focus.make("c", concepts=("auth",), updated=3),
            Focus.make("d", intent="docs", updated=4),
            Focus.make("e", intent="auth again", updated=5),
        ]
    )
    got = [f.agent for f, _ in rank(recs, "AUTH", 10)]
    assert got == ["c", "b", "e", "a"]  # same score: newest first
    assert len(rank(recs, "auth", 2)) == 2
    assert rank(recs, "   ", 10) == []


def test_release_rule_errors_and_result() -> None:
    """release: seed text for another's claim, StaleToken for a wrong token, None when free."""
    cur = ClaimRecord("k", (_h("a", "read", token=3), _h("b", "read", token=4)))
    with pytest.raises(NotHolder, match="claim on k is held by a, not c"):
        rules.release(cur, "k", "c", 3, 1, POLICY)
    with pytest.raises(StaleToken):
        rules.release(cur, "k", "b", 3, 1, POLICY)
    out = rules.release(cur, "k", "b", 4, 1, POLICY)
    assert out is not None
    assert [h.agent for h in out[0].holders] == ["a"]  # type: ignore[union-attr]
    assert rules.release(None, "k", "b", 4, 1, POLICY) is None


def test_release_and_renew_rules_without_token() -> None:
    """With no token, release and renew take the agent's own live grant; a wrong token is
    refused naming the current one; nothing held releases nothing."""
    cur = ClaimRecord("k", (_h("a", "read", token=3), _h("b", "read", token=4, ttl=10)))
    out = rules.release(cur, "k", "b", None, 1, POLICY)
    assert out is not None
    assert ([h.agent for h in out[0].holders], out[1].token) == (["a"], 4)  # type: ignore[union-attr]
    assert rules.release(None, "k", "b", None, 1, POLICY) is None
    with pytest.raises(
        StaleToken, match="token 3 is stale on k: b's current grant there is token 4"
    ):
        rules.release(cur, "k", "b", 3, 1, POLICY)
    rec, new = rules.renew(cur, "k", "b", None, None, 5, POLICY)
    assert (new.token, new.expires) == (4, 15)
    assert rec.holders[0] == cur.holders[0]
    with pytest.raises(StaleToken, match="token 3 is stale"):
        rules.renew(cur, "k", "b", 3, None, 5, POLICY)
    with pytest.raises(NotHolder, match="claim on k is held by a, not c"):
        rules.renew(cur, "k", "c", None, None, 5, POLICY)


def test_renew_beat_and_drop_rules() -> None:
    """renew extends one grant; beat renews and marks an agent's grants; drop removes by reason."""
    cur = ClaimRecord("k", (_h("a", "read", token=3, ttl=10), _h("b", "read", token=4, ttl=10)))
    rec, new = rules.renew(cur, "k", "a", 3, 100, 5, POLICY)
    assert new.expires == 105
    assert rec.holders[1] == cur.holders[1]
    with pytest.raises(NotHolder, match="you hold no claim"):
        rules.renew(None, "k", "a", 3, None, 5, POLICY)
    beaten = rules.beat(cur, "b", 5, POLICY)
    assert beaten is not None
    assert (beaten.holders[1].heartbeat, beaten.holders[1].expires) == (5, 15)
    assert rules.beat(cur, "nobody", 5, POLICY) is None
    out = rules.drop(cur, lambda h: "holder-exited" if h.agent == "a" else None)
    assert out is not None
    assert [h.agent for h in out[0].holders] == ["b"]  # type: ignore[union-attr]
    assert [r for _, r in out[1]] == ["holder-exited"]
    assert rules.drop(cur, lambda h: None) is None


def test_with_token_is_replace_spelled_out() -> None:
    """The fast token fill equals dataclasses.replace for a holder with every field set."""
    import dataclasses

    from agentcoord.stores.kv._claimrules import _HOLDER_FIELDS, _with_token

    h = Holder(
        agent="a",
        mode="read",
        ttl=5.0,
        acquired=1.0,
        expires=6.0,
        token=None,
        purpose="p",
        pid=7,
        pid_start=8.5,
        heartbeat=2.0,
        host="h",
    )
    assert tuple(f.name for f in dataclasses.fields(Holder)) == _HOLDER_FIELDS
    assert len(_HOLDER_FIELDS) == 11, "a new Holder field must be added to _with_token"
    assert _with_token(h, 42) == dataclasses.replace(h, token=42)


def test_position_reads_the_short_ack_subject_like_nats_py() -> None:
    """The claims view's cheap read of a delivery's ack subject agrees with nats-py's metadata."""
    from nats.aio.msg import Msg

    from agentcoord.stores.kv.claimstore import _position

    reply = "$JS.ACK.KV_agent-claims.abc.1.4242.17.1732960000000000000.3"
    msg = Msg(_client=None, subject="$KV.agent-claims.k", reply=reply)  # type: ignore[arg-type]
    meta = msg.metadata
    assert _position(msg) == (meta.sequence.stream, meta.num_pending) == (4242, 3)
    long = "$JS.ACK.dom.acc.KV_agent-claims.abc.1.4242.17.1732960000000000000.3.tok"
    other = Msg(_client=None, subject="$KV.agent-claims.k", reply=long)  # type: ignore[arg-type]
    assert _position(other) == (4242, 3)
