"""Codex, Gemini CLI and OpenCode as session kinds: each is recognised from the process chain
its MCP servers really run under (docs/other-clis.md), says its session id, cwd and name, and
Codex's shared app-server is refused rather than taken for one session."""

from __future__ import annotations

import pytest

from agentcoord.identity.ancestry import ProcInfo, decide
from agentcoord.identity.humanproof import agent_markers
from agentcoord.identity.kinds import KINDS, ClaudeCode, Codex, Gemini, OpenCode
from agentcoord.identity.kinds.codex import subcommand
from agentcoord.identity.runners import Runners

pytestmark = pytest.mark.unit

CODEX_NATIVE = (
    "/opt/codex/lib/node_modules/@openai/codex/node_modules/@openai/codex-linux-x64/vendor/"
    "x86_64-unknown-linux-musl/bin/codex"
)
SHIM = ProcInfo(100, 100.0, "python3", argv0="python3", args=("python3", "-m", "agentcoord"))


def _chain(*procs: ProcInfo) -> list[ProcInfo]:
    return [SHIM, *procs, ProcInfo(1, 1.0, "systemd", argv0="/sbin/init")]


def _codex(pid: int, *args: str, cwd: str = "/home/me/app", **env: str) -> ProcInfo:
    return ProcInfo(
        pid, float(pid), "codex", CODEX_NATIVE, CODEX_NATIVE, cwd, (CODEX_NATIVE, *args), env
    )


def test_codex_exec_is_a_codex_session_not_its_node_wrapper() -> None:
    """Under ``codex exec`` the native codex process is the session; the node script that
    started it is not one."""
    wrapper = ProcInfo(50, 50.0, "node", "node", "/usr/bin/node", "/home/me/app",
                       ("node", "/opt/codex/bin/codex", "exec", "hi"))  # fmt: skip
    codex = _codex(60, "exec", "--json", "hi")
    found = decide(_chain(codex, wrapper), Runners(), KINDS)
    assert (found.kind, found.proc, found.session_kind) == ("session", codex, Codex())
    assert not Codex().recognise(wrapper)
    assert Codex().refusal(codex) is None


def test_codex_app_server_is_refused_with_the_switch_that_avoids_it() -> None:
    """An MCP server under ``codex app-server`` (shared by several sessions) is recognised but
    refused in one line naming the pid, the cause and both fixes (``agentcoord setup codex``,
    ``--disable daemon_auto_start``); options before the subcommand and an interpreter before
    ``codex`` do not hide it."""
    server = _codex(70, "-c", "x=1", "app-server", "--listen", "unix://")
    found = decide(_chain(server), Runners(), KINDS)
    assert found.session_kind == Codex()
    why = Codex().refusal(server)
    assert why is not None
    assert "pid 70" in why
    assert "--disable daemon_auto_start" in why
    assert "run `agentcoord setup codex`" in why
    assert "cannot tell which session" in why
    assert "\n" not in why
    assert subcommand(("python3", "/t/bin/codex", "app-server", "--")) == "app-server"
    assert subcommand((CODEX_NATIVE, "--cd", "app-server", "exec")) == "exec"  # a value
    assert subcommand((CODEX_NATIVE,)) is None


def test_codex_session_id_cwd_and_name() -> None:
    """The id is CODEX_THREAD_ID (or CODEX_SESSION_ID) from the caller, else from codex, else
    none; ``-C``/``--cd`` moves the cwd (relative to where codex started) and the name."""
    kind = Codex()
    plain = _codex(60, "exec")
    assert kind.session_id(ProcInfo(9, 9.0, "sh", environ={"CODEX_THREAD_ID": "t-1"}), plain) == (
        "t-1"
    )
    assert kind.session_id(None, _codex(60, CODEX_SESSION_ID="s-2")) == "s-2"
    assert kind.session_id(SHIM, plain) is None  # Codex's stripped MCP environment
    assert (kind.cwd(plain), kind.name_base(plain)) == ("/home/me/app", "app")
    moved = _codex(60, "-C", "../lib/", "exec")
    assert (kind.cwd(moved), kind.name_base(moved)) == ("/home/me/lib", "lib")
    assert kind.cwd(_codex(60, "--cd=/srv/site", "exec")) == "/srv/site"
    assert kind.cwd(_codex(60, "-C", "rel", cwd="")) is None  # nowhere to resolve it from


def test_gemini_the_nearer_of_its_two_node_processes_is_the_session() -> None:
    """Gemini runs as node + a relaunched node child, both running the gemini script; the
    child (the MCP server's parent) is the session. Other node scripts are not Gemini."""
    outer = ProcInfo(40, 40.0, "node", "node", "/usr/bin/node", "/w/site",
                     ("node", "/opt/gemini/bin/gemini", "-p", "hi"))  # fmt: skip
    inner = ProcInfo(41, 41.0, "node", "/usr/bin/node", "/usr/bin/node", "/w/site",
                     ("/usr/bin/node", "--max-old-space-size=8192",
                      "/opt/gemini/lib/node_modules/@google/gemini-cli/bundle/gemini.js", "-p"),
                     {"GEMINI_SESSION_ID": "g-1"})  # fmt: skip
    found = decide(_chain(inner, outer), Runners(), KINDS)
    assert (found.proc, found.session_kind) == (inner, Gemini())
    assert Gemini().session_id(SHIM, inner) == "g-1"
    assert Gemini().session_id(None, outer) is None
    assert Gemini().name_base(inner) == "site"
    other = ProcInfo(42, 42.0, "node", "node", args=("node", "/srv/gemini-proxy.js"))
    assert not Gemini().recognise(other)
    assert not Gemini().recognise(ProcInfo(43, 43.0, "node", "node", args=("node",)))


def test_opencode_is_its_own_process_whatever_its_binary_is_called() -> None:
    """OpenCode is the ``opencode`` process (``opencode.exe`` on disk in the npm package), the
    MCP server's direct parent; it gives no session id, and reads as its cwd."""
    run = ProcInfo(30, 30.0, "opencode", "opencode", "/opt/oc/bin/opencode.exe", "/w/api",
                   ("opencode", "run", "--format", "json"))  # fmt: skip
    found = decide(_chain(run), Runners(), KINDS)
    assert (found.proc, found.session_kind) == (run, OpenCode())
    assert OpenCode().recognise(ProcInfo(31, 31.0, "opencode.exe", "/x/opencode.exe"))
    assert not OpenCode().recognise(ProcInfo(32, 32.0, "opencode-lsp", "opencode-lsp"))
    assert OpenCode().session_id(SHIM, run) is None
    assert (OpenCode().cwd(run), OpenCode().name_base(run)) == ("/w/api", "api")


def test_a_claude_session_run_from_codex_is_claude_the_nearer() -> None:
    """Kinds nest like any process: the nearest recognised process is the session."""
    claude = ProcInfo(20, 20.0, "claude", "claude", cwd="/w/x")
    chain = _chain(claude, _codex(10, "exec"))
    assert decide(chain, Runners(), KINDS).session_kind == ClaudeCode()


@pytest.mark.parametrize(
    ("env", "marker"),
    [
        ({"CODEX_THREAD_ID": "019a-…"}, "CODEX_THREAD_ID"),
        ({"CODEX_SESSION_ID": "019a-…"}, "CODEX_SESSION_ID"),
        ({"GEMINI_CLI": "1"}, "GEMINI_CLI"),
        ({"GEMINI_SESSION_ID": "g"}, "GEMINI_SESSION_ID"),
        ({"OPENCODE": "1", "OPENCODE_PID": "30", "AGENT": "1"}, "OPENCODE"),
    ],
    ids=["codex-thread", "codex-session", "gemini", "gemini-session", "opencode"],
)
def test_each_clis_shell_environment_betrays_an_agent(env: dict[str, str], marker: str) -> None:
    """What each CLI sets for the commands it runs is among the human proof's markers."""
    assert marker in agent_markers({"HOME": "/home/me", **env})
