"""Seeded hostile inputs of the attack suite (docs/reliability.md "Attack suite"): tool
arguments fuzzed from each tool's input schema, malformed JSON-RPC frames and hostile kube
bodies. Pure: a seeded ``random.Random`` in, values out, so one seed replays one run.

Values JSON cannot carry through the SDK client (lone surrogates, nesting deeper than the
encoder recurses) are marked ``raw``: their frames are written by hand here and sent on a bare
socket.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from tests.security.test_hostile_input import HOSTILE, MALFORMED

__all__ = [
    "ROUTES_RAW",
    "ROUTES_SDK",
    "SIZES",
    "Case",
    "Nest",
    "encode",
    "fuzz_cases",
    "kube_bodies",
    "malformed_frames",
    "show",
]

SIZES = (0, 1 << 10, 8 << 10, 64 << 10, 1 << 20)  # string lengths every string argument gets
# Who sends a case: (caller, listener, client). The SDK carries well-formed cases; the bare
# socket carries the rest.
ROUTES_SDK = ("agent/unix/sdk", "agent/unix/sdk", "human/http/sdk", "agent/http/sdk")
ROUTES_RAW = ("human/unix/raw", "agent/unix/raw", "human/http/raw", "agent/http/raw")
# Arguments that make a call wait (for the human, a reply, a runner): a fuzzed call waits
# at most this long, so a case is an attack on the input, not a long wait.
QUICK = {"timeout_secs": 1, "wait_secs": 0, "wait": False}
WAITS = frozenset(QUICK)
CONTROL = "".join(map(chr, [*range(0, 32), 127, 0x85, 0x2028, 0x2029, 0x202E, 0xFEFF]))
SURROGATES = ("\ud800", "\udfff", "a\udc00b", "\ud83d")  # lone halves, as JSON escapes carry
ALPHABET = "abcXYZ019 -_./:é漢字🙂"
_NEST_MARK = "\u0000attack-nest\u0000"


@dataclass(frozen=True)
class Nest:
    """A value nested ``depth`` deep (``[[[...]]]`` or ``{"a":{"a":...}}``), encoded by hand:
    deeper than json.dumps recurses."""

    depth: int
    kind: str = "list"


@dataclass(frozen=True)
class Case:
    """One fuzzed tools/call: the tool, what was done to its arguments, the arguments, the
    route it is sent on."""

    tool: str
    label: str
    arguments: Any
    route: str

    @property
    def raw(self) -> bool:
        return self.route.endswith("/raw")

    def frame(self, msg_id: str) -> bytes:
        params = {"name": self.tool, "arguments": self.arguments}
        return encode({"jsonrpc": "2.0", "id": msg_id, "method": "tools/call", "params": params})

    def describe(self) -> str:
        return f"{self.tool} ({self.label}) via {self.route}: {show(self.arguments)}"


def encode(value: Any) -> bytes:
    """JSON bytes of ``value``; lone surrogates become ``\\udXXX`` escapes (valid JSON text,
    invalid Unicode), :class:`Nest` its nesting written out."""
    nests: list[Nest] = []

    def swap(v: Any) -> Any:
        if isinstance(v, Nest):
            nests.append(v)
            return _NEST_MARK
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, list):
            return [swap(x) for x in v]
        return v

    text = json.dumps(swap(value), ensure_ascii=True, separators=(",", ":")).encode()
    mark = json.dumps(_NEST_MARK).encode()
    for n in nests:
        if n.kind == "list":
            deep = b"[" * n.depth + b"]" * n.depth
        else:
            deep = b'{"a":' * n.depth + b"1" + b"}" * n.depth
        text = text.replace(mark, deep, 1)
    return text


def show(value: Any, limit: int = 240) -> str:
    """A short, printable rendering of an input (strings cut, sizes said)."""
    if isinstance(value, bytes):
        text = repr(value[:limit]) + (f"... ({len(value)} bytes)" if len(value) > limit else "")
        return text
    text = encode(value).decode("ascii", "replace")
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} bytes as JSON)"


def _types(schema: dict[str, Any]) -> set[str]:
    t = schema.get("type", [])
    return set(t if isinstance(t, list) else [t])


def _benign(tool: str, prop: str, schema: dict[str, Any]) -> Any:
    """A plausible value for a required argument, so each case changes one thing."""
    types = _types(schema)
    if "string" in types:
        return f"attack-{tool}-{prop}".replace("_", "-")
    if "integer" in types or "number" in types:
        return 1
    if "boolean" in types:
        return False
    if "array" in types:
        return [f"attack-{tool}"]
    return {}


def _quick(prop: str, value: Any, schema: dict[str, Any]) -> Any:
    """The shortest wait the schema allows (its ``minimum``), else :data:`QUICK`'s."""
    if prop.endswith("_secs") and isinstance(schema.get("minimum"), int | float):
        return schema["minimum"]
    return value


def _wrong_type(rng: random.Random, schema: dict[str, Any], prop: str) -> Any:
    types = _types(schema)
    pool: list[Any] = []
    if "string" not in types:
        pool += ["1", "", "\u0000"]
    if not types & {"integer", "number"}:
        pool += [1, -1, 1e308]
    if "boolean" not in types:
        pool += [True]
    if "array" not in types:
        pool += [[], [1, "a", None]]
    if "object" not in types:
        pool += [{}, {"a": {"b": None}}]
    if prop not in WAITS:  # null is "the default" to some tools: for a wait, a long one
        pool.append(None)
    return rng.choice(pool)


def _text(rng: random.Random, size: int, style: str = "mixed") -> str:
    """``size`` characters: ``mixed`` (ASCII, punctuation, multi-byte), ``alnum`` or
    ``plain`` (one letter), seeded. Plain and alnum ones pass the checks that punctuation
    trips early (a NATS subject token, a name) and reach deeper."""
    if style == "plain":
        return rng.choice("xyz") * size
    alphabet = ALPHABET if style == "mixed" else "abcdefghijklmnopqrstuvwxyz0123456789"
    unit = "".join(rng.choice(alphabet) for _ in range(min(size, 256)))
    return (unit * (size // max(len(unit), 1) + 1))[:size]


def _styles(rng: random.Random) -> tuple[str, ...]:
    """The text style of each of :data:`SIZES`: every style at least once per argument."""
    return (
        rng.choice(["mixed", "plain"]),
        "mixed",
        "alnum",
        "plain",
        rng.choice(["mixed", "alnum"]),
    )


def _number_cases(rng: random.Random, prop: str, integer: bool) -> list[tuple[str, Any]]:
    if prop in WAITS:  # a valid long wait is a wait, not an attack: invalid values only
        return [("negative", -1), ("-1e308", -1e308)]
    pool = [("negative", -1), ("2**64", 2**64), ("1e308", 1e308), ("-2**63-1", -(2**63) - 1)]
    if integer:
        pool.append(("fraction", 1.5))
    return rng.sample(pool, 2)


def _prop_cases(rng: random.Random, prop: str, ps: dict[str, Any]) -> list[tuple[str, Any, bool]]:
    """(label, value, raw) of one argument's cases."""
    types = _types(ps)
    out: list[tuple[str, Any, bool]] = [("wrong type", _wrong_type(rng, ps, prop), False)]
    if "string" in types:
        for size, style in zip(SIZES, _styles(rng), strict=True):
            out.append((f"{style} string of {size} chars", _text(rng, size, style), False))
        out.append(("hostile id", rng.choice(HOSTILE), False))
        out.append(("control characters", "".join(rng.sample(CONTROL, 12)), False))
        out.append(("lone surrogate", _text(rng, 8) + rng.choice(SURROGATES), True))
    if types & {"integer", "number"}:
        out += [
            (label, value, False) for label, value in _number_cases(rng, prop, "integer" in types)
        ]
    if "array" in types:
        out.append(("10,000 items", [_text(rng, 8) for _ in range(10_000)], False))
        out.append(("deep nesting", [Nest(rng.choice([64, 1000, 100_000]))], True))
    if "object" in types:
        out.append(("10,000 keys", {f"k{i}": i for i in range(10_000)}, False))
        out.append(("deep nesting", {"a": Nest(rng.choice([64, 1000, 100_000]), "dict")}, True))
    return out


def fuzz_cases(tools: list[dict[str, Any]], rng: random.Random) -> list[Case]:
    """Every tool, every argument: wrong types, the :data:`SIZES` string lengths, control
    characters, lone surrogates, hostile ids, deep nesting, long lists; per tool, missing
    required arguments, an extra one and arguments that are no object. Routes are seeded."""
    cases: list[Case] = []

    def add(tool: str, label: str, args: Any, raw: bool = False) -> None:
        cases.append(Case(tool, label, args, rng.choice(ROUTES_RAW if raw else ROUTES_SDK)))

    for tool in sorted(tools, key=lambda t: str(t["name"])):
        name = tool["name"]
        schema = tool.get("inputSchema") or {}
        props: dict[str, Any] = schema.get("properties") or {}
        required = list(schema.get("required") or [])
        base = {p: _benign(name, p, props[p]) for p in required if p in props}
        base.update({k: _quick(k, v, props[k]) for k, v in QUICK.items() if k in props})
        for p in required:
            add(name, f"without required {p}", {k: v for k, v in base.items() if k != p})
        add(name, "an extra argument", {**base, f"zz{rng.randrange(1 << 30)}": _text(rng, 40)})
        add(name, "arguments not an object", rng.choice([[], "x", 7, [base]]), raw=True)
        for prop, ps in sorted(props.items()):
            for label, value, raw in _prop_cases(rng, prop, ps):
                add(name, f"{prop}: {label}", {**base, prop: value}, raw)
    return cases


def malformed_frames(rng: random.Random, tools: list[str], count: int) -> list[bytes]:
    """The fixed malformed frames of tests/security, then ``count`` seeded ones: cut short,
    random bytes, no JSON, batches, wrong versions, huge or odd ids, unknown methods, lone
    surrogates, NULs, byte-order marks. None contains a newline (the unix framing)."""
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}

    def call(i: int) -> dict[str, Any]:
        params = {"name": rng.choice(tools), "arguments": {}}
        return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}

    makers = [
        lambda: encode(call(1))[: rng.randrange(1, len(encode(call(1))))],
        lambda: rng.randbytes(rng.randrange(1, 4000)),
        lambda: rng.choice([b"ping", b"GET / HTTP/1.1", b"<xml/>", b"{'a': 1}", b"nul\x00l", b"}"]),
        lambda: encode([ping] * rng.randrange(1, 60)),
        lambda: encode([[ping]]),
        lambda: encode([{"jsonrpc": "2.0", "method": "notifications/x"}] * 3),
        lambda: encode([call(i) if i % 2 else {"id": i} for i in range(rng.randrange(2, 40))]),
        lambda: encode({**ping, "jsonrpc": rng.choice(["1.0", 2.0, None, "2.0 ", ""])}),
        lambda: encode({**ping, "id": rng.choice([10**100, 1.5, -1, [1], {"a": 1}, False])}),
        lambda: encode({**ping, "id": _text(rng, rng.choice([1 << 10, 64 << 10]))}),
        lambda: encode({**ping, "method": _text(rng, rng.choice([1, 300, 64 << 10]))}),
        lambda: encode({**ping, "method": rng.choice(["rpc.x", "tools/call ", "TOOLS/LIST"])}),
        lambda: encode({**ping, "method": "ping" + rng.choice(SURROGATES)}),
        lambda: encode({**ping, "id": rng.choice(SURROGATES)}),
        lambda: encode({**call(2), "params": {"name": "whoami" + rng.choice(SURROGATES)}}),
        lambda: encode(call(3)).replace(b'"arguments":{}', b'"arguments":{"\\ud800":1}'),
        lambda: encode(call(4)).replace(b"tools/call", b"tools/\xed\xa0\x80call"),
        lambda: encode({**ping, "params": rng.choice([[], "x", 3, None, {"_meta": []}])}),
        lambda: b"\xef\xbb\xbf" + encode(ping),
        lambda: encode(ping).decode().encode("utf-16"),
        lambda: encode({**ping, "id": "a\u0000b"}),
        lambda: encode({"jsonrpc": "2.0", "id": 5, "method": "tools/call"}),
        lambda: encode({**call(6), "params": {"name": _text(rng, rng.choice([300, 64 << 10]))}}),
        lambda: encode({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": []}),
    ]
    out = list(MALFORMED)
    for _ in range(count):
        frame = rng.choice(makers)()
        out.append(frame.replace(b"\n", b" ").replace(b"\r", b" ") or b"x")
    return out


def kube_bodies(rng: random.Random, count: int) -> list[tuple[str, bytes]]:
    """(label, body) of AgentProfile creates that must be refused with a clear 4xx: malformed
    JSON, wrong types, deep nesting, invalid Unicode, names no object may have."""

    def profile(name: Any, spec: Any = None) -> dict[str, Any]:
        return {
            "apiVersion": "fastverk.savvifi.com/v1",
            "kind": "AgentProfile",
            "metadata": {"name": name},
            "spec": spec if spec is not None else {"backend": "claude-code"},
        }

    makers: list[tuple[str, Any]] = [
        ("cut short", lambda: encode(profile("cut"))[: rng.randrange(1, 60)]),
        ("random bytes", lambda: rng.randbytes(rng.randrange(1, 3000))),
        ("not an object", lambda: encode(rng.choice([[], "x", 1, None]))),
        ("spec not an object", lambda: encode(profile("p-spec", rng.choice([[], "x", 7])))),
        ("wrong field type", lambda: encode(profile("p-type", {"backend": 1, "maxTurns": "x"}))),
        (
            "deep nesting",
            lambda: encode(profile("p-deep", {"backend": "c", "env": Nest(5000, "d")})),
        ),
        (
            "deep list",
            lambda: encode(profile("p-deeplist", {"backend": "c", "mcpServers": Nest(5000)})),
        ),
        ("lone surrogate in spec", lambda: encode(profile("p-sur", {"backend": "c\ud800"}))),
        ("lone surrogate in name", lambda: encode(profile("p-\udfff"))),
        ("invalid UTF-8", lambda: encode(profile("p-utf8")).replace(b"claude", b"cl\xff\xfeaude")),
        ("bad name", lambda: encode(profile(rng.choice(["../x", "A B", "x" * 300, "", "a/b"])))),
        ("name not a string", lambda: encode(profile(rng.choice([1, None, [], {"a": 1}])))),
        (
            "labels wrong",
            lambda: encode(
                {**profile("p-lab"), "metadata": {"name": "p-lab", "labels": {"a": {"b": 1}}}}
            ),
        ),
    ]
    return [(label, make()) for label, make in (rng.choice(makers) for _ in range(count))]
