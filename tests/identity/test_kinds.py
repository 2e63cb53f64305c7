"""Session kinds: how a process is recognised as a session of an agent CLI, where its session
id, cwd and name come from, and how the ancestry walk uses the kinds (identity/kinds/)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from agentcoord.identity.ancestry import ProcInfo, decide
from agentcoord.identity.humanproof import AGENT_MARKERS, agent_markers
from agentcoord.identity.kinds import KINDS, ClaudeCode, SessionKind, configured, kind_markers
from agentcoord.identity.runners import RunnerInfo, Runners
from agentcoord.kernel.config import load_config

pytestmark = pytest.mark.unit

CLAUDE = ClaudeCode()


def _p(pid: int, name: str, argv0: str = "", exe: str = "", **env: str) -> ProcInfo:
    return ProcInfo(
        pid=pid,
        create_time=float(pid),
        name=name,
        argv0=argv0,
        exe=exe,
        cwd=f"/w/{pid}",
        environ=env,
    )


@dataclass(frozen=True)
class _Other:
    """A second CLI, as a new kind would be: one value with the same six answers."""

    name: ClassVar[str] = "other"
    markers: ClassVar[tuple[str, ...]] = ("OTHER_SESSION", "CLAUDECODE")
    has_native_inbox: ClassVar[bool] = False

    def recognise(self, proc: ProcInfo) -> bool:
        return proc.name == "other"

    def refusal(self, session: ProcInfo) -> str | None:
        return None

    def session_id(self, peer: ProcInfo | None, session: ProcInfo) -> str | None:
        return peer.environ.get("OTHER_SESSION") if peer is not None else None

    def cwd(self, session: ProcInfo) -> str | None:
        return session.cwd

    def name_base(self, session: ProcInfo) -> str | None:
        return "other"

    def native_name(self, session: ProcInfo) -> str | None:
        return None

    def configured(self, cfg: object) -> _Other:
        return self


def test_claude_code_is_the_first_registered_kind() -> None:
    """KINDS holds Claude Code, named ``claude``, first, then Codex, Gemini and OpenCode."""
    assert [k.name for k in KINDS] == ["claude", "codex", "gemini", "opencode"]
    assert isinstance(KINDS[0], ClaudeCode)


def test_claude_process_recognised_by_name_argv_or_native_path() -> None:
    """claude is matched by process name, argv[0] basename, or the native install path."""
    assert CLAUDE.recognise(_p(1, "claude"))
    assert CLAUDE.recognise(_p(1, "node", argv0="/usr/lib/node_modules/.bin/claude"))
    assert CLAUDE.recognise(_p(1, "2.1.0", exe="/home/u/.local/share/claude/versions/2.1.0"))
    assert not CLAUDE.recognise(_p(1, "claudette"))
    assert not CLAUDE.recognise(_p(1, "node", argv0="/usr/bin/claude-helper"))
    assert not CLAUDE.recognise(_p(1, "x", exe="/home/u/.local/share/claude/versions/2.1.0/lib"))


def test_claude_session_id_from_the_callers_environment_first(tmp_path: Path) -> None:
    """The id is the caller's CLAUDE_CODE_SESSION_ID, else the session registry's sessionId,
    else none; the registry is read only where the kind was told where it is."""
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "8.json").write_text(json.dumps({"pid": 8, "sessionId": "from-file"}))
    claude, kind = _p(8, "claude"), ClaudeCode(tmp_path)
    assert kind.session_id(_p(10, "sh", CLAUDE_CODE_SESSION_ID="from-env"), claude) == "from-env"
    assert kind.session_id(_p(10, "sh"), claude) == "from-file"
    assert kind.session_id(None, claude) == "from-file"
    assert CLAUDE.session_id(_p(10, "sh"), claude) is None  # no claude dir: no registry read
    assert kind.session_id(_p(10, "sh"), _p(9, "claude")) is None  # no file for pid 9


@pytest.mark.parametrize(
    "content", ["not json", "[1, 2]", json.dumps({"sessionId": 7}), json.dumps({"sessionId": ""})]
)
def test_a_bad_session_registry_entry_gives_no_id(tmp_path: Path, content: str) -> None:
    """An unreadable, non-object or non-string registry entry is no session id (not an error)."""
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "8.json").write_text(content)
    assert ClaudeCode(tmp_path).session_id(None, _p(8, "claude")) is None


def test_claude_cwd_and_name_come_from_its_process() -> None:
    """A Claude session works where its claude process does, and reads as that directory."""
    proc = ProcInfo(8, 8.0, "claude", cwd="/home/me/My App/")
    assert CLAUDE.cwd(proc) == "/home/me/My App/"
    assert CLAUDE.name_base(proc) == "My App"
    assert CLAUDE.name_base(ProcInfo(8, 8.0, "claude", cwd="/")) is None
    assert CLAUDE.name_base(ProcInfo(8, 8.0, "claude")) is None


def test_configured_kinds_know_where_the_cli_keeps_its_files(tmp_path: Path) -> None:
    """The daemon's Claude Code kind reads the session registry under its claude_dir."""
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "c")}
    cfg = load_config({}, env, uid=1000)
    kind = configured(cfg)[0]
    assert kind == ClaudeCode(tmp_path / "c")


def test_agent_markers_are_every_kinds_and_the_daemons_own() -> None:
    """AGENT_MARKERS is each kind's markers (once, in order), then AGENT_ID and the runners'."""
    assert AGENT_MARKERS == (
        "CLAUDECODE",
        "CLAUDE_CODE_SESSION_ID",
        "CLAUDE_CODE_ENTRYPOINT",
        "CODEX_THREAD_ID",
        "CODEX_SESSION_ID",
        "GEMINI_CLI",
        "GEMINI_SESSION_ID",
        "OPENCODE",
        "OPENCODE_PID",
        "AGENT",
        "AGENT_ID",
        "AGENTCOORD_JOB_ID",
    )
    both: tuple[SessionKind, ...] = (CLAUDE, _Other())
    assert kind_markers(both) == (*ClaudeCode.markers, "OTHER_SESSION")
    assert agent_markers({"AGENTCOORD_JOB_ID": "j", "CLAUDECODE": "1", "HOME": "/h"}) == [
        "CLAUDECODE",
        "AGENTCOORD_JOB_ID",
    ]
    assert agent_markers({"CLAUDECODE": ""}) == []  # set but empty is no marker


def test_the_nearest_runner_wins_over_any_session() -> None:
    """A runner anywhere in the chain wins over a claude below it (a runner's own claude -p)."""
    chain = [_p(30, "python"), _p(20, "claude"), _p(10, "bwrap"), _p(1, "init")]
    runners = Runners()
    runners.register(10, 10.0, RunnerInfo("r", 2, ("a",)))
    found = decide(chain, runners, KINDS)
    assert (found.kind, found.proc, found.runner) == (
        "runner",
        chain[2],
        RunnerInfo("r", 2, ("a",)),
    )
    assert found.runner_key == (10, 10.0)
    assert found.session_kind is None


def test_a_claude_process_makes_a_session_of_its_kind() -> None:
    """Without a runner, the nearest recognised process is the session, and says its kind."""
    chain = [_p(10, "python"), _p(9, "sh"), _p(8, "claude"), _p(1, "init")]
    found = decide(chain, Runners(), KINDS)
    assert (found.kind, found.proc, found.session_kind) == ("session", chain[2], CLAUDE)
    assert found.runner is None


def test_neither_runner_nor_session_is_none() -> None:
    """A chain with no runner and no recognised process decides nothing; so does no chain."""
    assert decide([_p(5, "bash"), _p(1, "init")], Runners(), KINDS).kind == "none"
    assert decide([], Runners(), KINDS).kind == "none"
    assert decide([_p(8, "claude")], Runners(), ()).kind == "none"  # no kinds, no sessions


def test_a_recycled_pid_is_not_a_runner() -> None:
    """A runner is its pid and start time: the same pid started later is not it."""
    chain = [_p(9, "sh"), _p(8, "claude")]
    runners = Runners()
    runners.register(9, 1234.0, RunnerInfo("r"))
    assert decide(chain, runners, KINDS).kind == "session"


def test_a_new_kind_is_one_more_entry() -> None:
    """With a second kind registered, its sessions are recognised and named by it, the nearest
    recognised process wins, and the registry order breaks a tie."""
    kinds: tuple[SessionKind, ...] = (CLAUDE, _Other())
    other_below = [_p(10, "sh"), _p(9, "other"), _p(8, "claude")]
    found = decide(other_below, Runners(), kinds)
    assert (found.proc, found.session_kind) == (other_below[1], kinds[1])
    claude_below = [_p(10, "sh"), _p(9, "claude"), _p(8, "other")]
    assert decide(claude_below, Runners(), kinds).session_kind == CLAUDE
    assert decide(other_below, Runners(), (CLAUDE,)).proc == other_below[2]  # unregistered


def test_both_kind_shapes_satisfy_the_protocol() -> None:
    """Claude Code and a stand-in second kind answer every question the Protocol asks."""
    for kind in (CLAUDE, _Other()):
        proc = _p(4, kind.name)
        assert kind.recognise(proc)
        assert isinstance(kind.name_base(proc), str)
        assert kind.cwd(proc) == "/w/4"
        assert kind.markers


@pytest.mark.parametrize(
    ("record", "name"),
    [
        ({"pid": 8, "sessionId": "s", "name": "app-7f"}, "app-7f"),
        ({"pid": 8, "sessionId": "s"}, None),
        ({"pid": 8, "name": ""}, None),
        ({"pid": 8, "name": 7}, None),
    ],
)
def test_claude_native_name_is_its_registry_name(
    tmp_path: Path, record: dict[str, object], name: str | None
) -> None:
    """A Claude session's own name is the registry record's string ``name``, None without it."""
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "8.json").write_text(json.dumps(record))
    assert ClaudeCode(tmp_path).native_name(_p(8, "claude")) == name
    assert ClaudeCode(tmp_path).native_name(_p(9, "claude")) is None  # no record at all


def test_only_claude_code_sessions_have_the_native_inbox() -> None:
    """Claude Code's sessions are its team inbox's own members; every other kind's sessions
    get a record published there (docs/claude-code.md "Who sessions can message")."""
    assert [k.name for k in KINDS if k.has_native_inbox] == ["claude"]
    assert not _Other().has_native_inbox
