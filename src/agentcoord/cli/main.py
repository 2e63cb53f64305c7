"""The ``agentcoord`` command: the daemon, the shim, and the human's views and tools.

Imports are deferred into each command so ``agentcoord mcp`` (started by every Claude Code
session) loads only the shim.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]


# Exit codes, the same for every command (README "Exit codes"); sysexits(3) values where one
# fits, so a script can tell "no daemon" from "the daemon said no".
EXIT_OK = 0
EXIT_FAILURE = 1  # the command ran and failed: the one line on stderr says why and what to do
EXIT_USAGE = 2  # argparse's own: an unknown command, a missing or bad argument
EXIT_UNAVAILABLE = 69  # EX_UNAVAILABLE: no daemon answers (start one)
EXIT_TEMPFAIL = 75  # EX_TEMPFAIL: the daemon is there but did not answer in time (try again)
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports a command SIGINT stopped (128 + 2)


def exit_code(exc: BaseException) -> int:
    """The one mapping from an error to the command's exit status."""
    from agentcoord.errors import DaemonTimeout, DaemonUnreachable

    if isinstance(exc, DaemonTimeout):
        return EXIT_TEMPFAIL
    if isinstance(exc, DaemonUnreachable):
        return EXIT_UNAVAILABLE
    return EXIT_FAILURE


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a reader that goes away (``agentcoord tail | head -3``) or Ctrl-C ends
    it quietly, never with a traceback."""
    from agentcoord.kernel.bytecode import use_private_bytecode_cache

    # Before the command's imports: docs/reliability.md "Bytecode cache".
    use_private_bytecode_cache()
    try:
        code = _dispatch(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # inside the try: a closed pipe fails here, not at exit
    except BrokenPipeError:
        # The Python docs' "Note on SIGPIPE" (signal module): point stdout at devnull so the
        # interpreter's own flush at exit does not raise again, and exit non-zero.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return code


def _dispatch(args: list[str]) -> int:
    if args[:1] == ["mcp"] and len(args) == 1:
        from agentcoord.client.shim import run_shim

        return run_shim()
    # hot path: every Claude Code hook runs this (`hook -h` is help, from the parser)
    if args[:1] == ["hook"] and len(args) == 2 and args[1] not in ("-h", "--help"):
        from agentcoord.claude.hookclient import run_hook

        return run_hook(args[1])
    if args == ["serve"]:  # how systemd starts the daemon: no flags, so no parser to build
        return _serve_with({})
    if args[:1] == ["claude"]:  # every other argument is Claude Code's: no parser of ours
        return _claude(args[1:])
    return _main_full(args)


def _claude(args: list[str]) -> int:
    """``agentcoord claude [ARGS...]``: Claude Code with agent-coord as its channel, so inbox
    messages reach the session while it is idle and its permission dialogs reach the console
    (docs/claude-code.md "Channels"). Replaces this process with ``claude``."""
    import json
    import os
    import shutil
    from pathlib import Path

    from agentcoord.claude.push import PUSH_ENV, channels_off

    binary = os.environ.get("AGENTCOORD_CLAUDE") or shutil.which("claude")
    if not binary:
        print("agentcoord: claude is not on PATH (install Claude Code first)", file=sys.stderr)
        return EXIT_UNAVAILABLE
    home = os.environ.get("CLAUDE_CONFIG_DIR")
    config_file = Path(home) / ".claude.json" if home else Path.home() / ".claude.json"
    try:
        config = json.loads(config_file.read_text())
    except (OSError, ValueError):
        config = {}
    env = dict(os.environ)
    off = channels_off(env, config if isinstance(config, dict) else {})
    if off is None:
        # The variable only opts this session into push; who it is still comes from its
        # processes (docs/security.md "By transport").
        env[PUSH_ENV] = "1"
    else:
        print(f"agentcoord: channels are off: {off}; messages arrive with hooks", file=sys.stderr)
    # Last, because the flag takes several values and would swallow a prompt after it.
    argv = [binary, *args, "--dangerously-load-development-channels", "server:agent-coord"]
    os.execvpe(binary, argv, env)


def _serve_with(flags: dict[str, Any]) -> int:
    from agentcoord.errors import AgentCoordError
    from agentcoord.kernel.config import load_config

    try:
        return _serve(load_config(flags))
    except AgentCoordError as exc:
        print(f"agentcoord: {exc}", file=sys.stderr)
        return exit_code(exc)


# argparse dests that are Config fields; every other option belongs to its command.
_CONFIG_FLAGS = (
    "state_dir",
    "runtime_dir",
    "config_file",
    "http_addr",
    "nats_url",
    "log_level",
    "nats_replicas",
    "host_id",
    "store",
    "kubeconfig",
    "kube_namespace",
)


# What `agentcoord -h` says first: plain text, as every help string (a terminal shows no markup).
_DESCRIPTION = (
    "Coordinate the coding-agent sessions on this machine: the daemon, the shim, and the "
    "human's views and tools."
)


def _common(parser: Any) -> None:
    parser.add_argument("--state-dir", dest="state_dir", help="state directory")
    parser.add_argument("--runtime-dir", dest="runtime_dir", help="runtime directory (socket)")
    parser.add_argument("--config", dest="config_file", help="TOML config file")


def _main_full(args: list[str]) -> int:
    import argparse
    import json

    from agentcoord import __version__
    from agentcoord.errors import AgentCoordError

    parser = argparse.ArgumentParser(prog="agentcoord", description=_DESCRIPTION)
    # The same line as `agentcoord version` (README "Commands").
    parser.add_argument("--version", action="version", version=f"agentcoord {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="run the daemon in the foreground")
    _common(p_serve)
    p_serve.add_argument("--http-addr", dest="http_addr", help="loopback host:port (:0 = any)")
    p_serve.add_argument(
        "--nats-url", dest="nats_url", help="existing NATS server or cluster (comma-separated)"
    )
    # External NATS credentials come from the config file or environment, never argv (ps shows
    # it): docs/one-host-to-many.md "Pointing two machines at one cluster"
    p_serve.add_argument(
        "--nats-replicas", dest="nats_replicas", type=int, help="JetStream replicas (R3 cluster)"
    )
    p_serve.add_argument("--host-id", dest="host_id", help="this host's name in agent ids")
    p_serve.add_argument("--log-level", dest="log_level", help="DEBUG, INFO, WARNING, ...")
    p_serve.add_argument(
        "--debug",
        dest="log_level",
        action="store_const",
        const="DEBUG",
        help="log at DEBUG; a failed start prints its traceback",
    )
    p_serve.add_argument(
        "--store", dest="store", choices=["sqlite", "kubernetes"], help="object store backend"
    )
    p_serve.add_argument("--kubeconfig", dest="kubeconfig", help="for --store kubernetes")
    p_serve.add_argument(
        "--kube-namespace", dest="kube_namespace", help="namespace of the daemon's objects"
    )
    p_mcp = sub.add_parser("mcp", help="stdio MCP shim (what Claude Code launches)")
    p_mcp.add_argument("--runtime-dir", dest="runtime_dir", help="runtime directory (socket)")
    sub.add_parser("claude", help="start Claude Code with agent-coord's channel: claude ARGS...")
    p_status = sub.add_parser("status", help="show the running daemon's status")
    _common(p_status)
    p_status.add_argument("--json", action="store_true", help="machine-readable output")
    for view, help_text in (
        ("agents", "live agents (sessions, registered, local) with status and focus"),
        ("claims", "live claims (leases) and their holders"),
        ("channels", "channels with phase and participants"),
        ("audit", "audit events (newest last)"),
        ("prompts", "the human prompts waiting for you"),
        ("profiles", "agent profiles: backend, MCP servers, model, and what is missing"),
    ):
        p_view = sub.add_parser(view, help=help_text)
        _common(p_view)
        p_view.add_argument("--json", action="store_true", help="machine-readable output")
        if view == "prompts":
            p_view.add_argument("--all", action="store_true", help="include answered prompts")
        if view == "agents":
            p_view.add_argument("--all", action="store_true", help="include ended sessions")
        if view == "audit":
            p_view.add_argument("--since", help="a duration ago (1h) or an ISO time")
            p_view.add_argument("--agent", dest="actor", help="only this agent's events")
            p_view.add_argument("--type", dest="event_type", help="e.g. CLAIM_RELEASED")
            p_view.add_argument("--limit", type=int, default=100)
        if view == "claims":
            p_view.add_argument("prefix", nargs="?", default="", help="key prefix")
    p_conflicts = sub.add_parser(
        "conflicts", help="files two worktrees of a repository both change, before the merge"
    )
    p_conflicts.add_argument("repo", nargs="?", help="the repository (default: here)")
    p_conflicts.add_argument("--json", action="store_true", help="machine-readable output")
    p_top = sub.add_parser(
        "top", help="live terminal view: who waits on you, agents, claims, approvals (keys act)"
    )
    _common(p_top)
    p_tail = sub.add_parser("tail", help="follow the audit log live")
    _common(p_tail)
    p_tail.add_argument("--json", action="store_true", help="one JSON event per line")
    p_answer = sub.add_parser("answer", help="answer a human prompt: answer ID TEXT")
    _common(p_answer)
    p_answer.add_argument("prompt", help="prompt id (from agentcoord prompts)")
    p_answer.add_argument("text", nargs="*", help="the answer (yes/no, a choice, JSON, text)")
    p_answer.add_argument("--json", action="store_true", help="the answer_prompt result")
    # A session's permission request: allow it and grant the standing approval it offers
    # (docs/approvals.md "From a permission prompt").
    p_answer.add_argument(
        "--allow-for", metavar="DURATION", help="allow, and keep allowing it for DURATION (1h)"
    )
    p_answer.add_argument(
        "--repo", nargs="?", const="", metavar="DIR", help="... in the asking session's repository"
    )
    p_answer.add_argument("--session", action="store_true", help="... for the asking session")
    p_allow = sub.add_parser(
        "allow",
        help="answer a permission question once for every session: allow PATTERN, --list, --revoke",
    )
    _common(p_allow)
    p_allow.add_argument(
        "pattern",
        nargs="?",
        help="a Claude Code permission rule: 'Bash(npm test:*)', 'Edit(src/**)'",
    )
    where = p_allow.add_mutually_exclusive_group()
    where.add_argument("--repo", metavar="DIR", help="only sessions in this repository")
    where.add_argument("--session", metavar="NAME", help="only this session (agentcoord agents)")
    p_allow.add_argument(
        "--for", dest="duration", metavar="DURATION", help="how long it stands (default 1h)"
    )
    p_allow.add_argument("--list", action="store_true", help="list the standing approvals")
    p_allow.add_argument("--revoke", metavar="ID", help="revoke an approval")
    p_allow.add_argument("--json", action="store_true", help="machine-readable output")
    p_token = sub.add_parser(
        "token", help="tokens that make an HTTP MCP client an agent: mint NAME, list, revoke ID"
    )
    token_sub = p_token.add_subparsers(dest="token_op", required=True)
    p_mint = token_sub.add_parser("mint", help="print a new token for agent NAME")
    p_mint.add_argument("arg", metavar="NAME", help="the agent the client will be")
    p_mint.add_argument("--for", dest="duration", metavar="DURATION", help="default 720h")
    p_tlist = token_sub.add_parser("list", help="list the tokens (never the tokens themselves)")
    p_revoke = token_sub.add_parser("revoke", help="end a token at once")
    p_revoke.add_argument("arg", metavar="ID", help="its id (agentcoord token list)")
    for p_t in (p_mint, p_tlist, p_revoke):
        _common(p_t)
        p_t.add_argument("--json", action="store_true", help="machine-readable output")
    p_version = sub.add_parser("version", help="print the version")
    p_version.add_argument("--json", action="store_true", help="machine-readable output")
    p_doctor = sub.add_parser("doctor", help="check this machine and say how to fix problems")
    _common(p_doctor)
    p_doctor.add_argument("--json", action="store_true", help="machine-readable output")
    p_console = sub.add_parser(
        "console", help="print (or open) a one-time login link to the web console"
    )
    _common(p_console)
    p_console.add_argument("--open", action="store_true", help="open it in a browser")
    p_console.add_argument(
        "--json", action="store_true", help='{"url": the link, "expires_at": epoch seconds}'
    )
    p_setup = sub.add_parser(
        "setup",
        help="connect a client (claude, codex, gemini, opencode) to this daemon, or guard a "
        "repository's commits",
    )
    setup_sub = p_setup.add_subparsers(dest="client", required=True)
    p_claude = setup_sub.add_parser("claude", help="register the MCP server and the hooks")
    p_claude.add_argument("--project", action="store_true", help="this project's .mcp.json")
    p_claude.add_argument("--remove", action="store_true", help="undo the setup")
    p_claude.add_argument(
        "--plugin",
        action="store_true",
        help="instead: install the agentcoord plugin (server, hooks, skill) with claude plugin",
    )
    for other_cli, its_file in (
        ("codex", "~/.codex/config.toml, or the project's .codex/config.toml"),
        ("gemini", "~/.gemini/settings.json, or the project's .gemini/settings.json"),
        ("opencode", "~/.config/opencode/opencode.json, or the project's opencode.json"),
    ):
        p_cli = setup_sub.add_parser(other_cli, help=f"register the MCP server in {its_file}")
        p_cli.add_argument("--project", action="store_true", help="this project's file")
        p_cli.add_argument("--remove", action="store_true", help="undo the setup")
    p_git = setup_sub.add_parser(
        "git", help="install the pre-commit and pre-push guards (claimed files)"
    )
    p_git.add_argument("repo", nargs="?", help="the repository (default: the current directory)")
    p_git.add_argument("--remove", action="store_true", help="remove it, restore the old hook")
    p_hook = sub.add_parser("hook", help="Claude Code hook command (reads the hook JSON)")
    p_hook.add_argument("event", help="session-start, pre-tool-use, ...")
    p_install = sub.add_parser("install", help="install the systemd user units")
    p_install.add_argument("--user", action="store_true", required=True, help="user units")
    p_install.add_argument("--remove", action="store_true", help="disable and delete them")
    p_install.add_argument("--no-enable", action="store_true", help="only write the files")
    p_install.add_argument("--json", action="store_true", help="machine-readable output")
    p_kube = sub.add_parser("kubeconfig", help="print a kubeconfig for the running daemon")
    _common(p_kube)
    p_kube.add_argument(
        "--write",
        nargs="?",
        const="",
        metavar="PATH",
        help="write it to PATH (default ~/.kube/agentcoord, 0600) and print the export line",
    )
    sub.add_parser("crds", help="print CustomResourceDefinition YAML for a real cluster")
    ns = parser.parse_args(args)
    try:
        if ns.command == "version":
            print(json.dumps({"version": __version__}) if ns.json else f"agentcoord {__version__}")
            return 0
        if ns.command == "hook":
            from agentcoord.claude.hookclient import run_hook

            return run_hook(ns.event)
        if ns.command == "conflicts":
            from agentcoord.cli.conflictview import show_conflicts

            return show_conflicts(ns.repo, ns.json)
        if ns.command == "setup" and ns.client == "git":
            return _setup_git(ns.repo, ns.remove)
        if ns.command == "setup" and ns.client == "claude" and ns.plugin:
            return _setup_plugin(ns.project, ns.remove)
        if ns.command == "setup" and ns.client in ("codex", "gemini", "opencode"):
            return _setup_cli(ns.client, ns.project, ns.remove)
        if ns.command == "setup":
            return _setup(ns.project, ns.remove)
        if ns.command == "install":
            return _install(ns.remove, not ns.no_enable, ns.json)
        if ns.command == "crds":
            from agentcoord.stores.objects.apidiscovery import crds_yaml

            sys.stdout.write(crds_yaml())
            return 0
        if ns.command == "mcp":
            from pathlib import Path

            from agentcoord.client.shim import run_shim

            return run_shim(Path(ns.runtime_dir) if ns.runtime_dir else None)
        flags = {k: getattr(ns, k) for k in _CONFIG_FLAGS if hasattr(ns, k)}
        from agentcoord.kernel.config import load_config

        cfg = load_config(flags)
        if ns.command == "serve":
            return _serve(cfg)
        if ns.command == "status":
            return _status(cfg, ns.json)
        if ns.command == "doctor":
            return _doctor(cfg, ns.json)
        if ns.command == "console":
            return _console(cfg, ns.open, ns.json)
        if ns.command in ("agents", "claims", "channels", "audit", "prompts", "profiles"):
            from agentcoord.cli.views import run_view

            return run_view(cfg, ns.command, _view_args(ns), ns.json)
        if ns.command == "allow":
            from agentcoord.cli.allow import allow

            return allow(
                cfg,
                ns.pattern,
                repo=ns.repo,
                session=ns.session,
                duration=ns.duration,
                list_them=ns.list,
                revoke=ns.revoke,
                as_json=ns.json,
            )
        if ns.command == "token":
            from agentcoord.cli.tokens import token

            arg = getattr(ns, "arg", None)
            return token(cfg, ns.token_op, arg, getattr(ns, "duration", None), ns.json)
        if ns.command == "top":
            from agentcoord.cli.top import run_top

            return run_top(cfg)
        if ns.command == "tail":
            from agentcoord.cli.views import tail

            return tail(cfg, ns.json)
        if ns.command == "answer":
            from agentcoord.cli.views import answer

            if ns.allow_for is not None:
                from agentcoord.cli.answerallow import answer_allowing

                return answer_allowing(
                    cfg,
                    ns.prompt,
                    " ".join(ns.text),
                    duration=ns.allow_for,
                    repo=ns.repo,
                    session=ns.session,
                    as_json=ns.json,
                )
            if not ns.text or ns.repo is not None or ns.session:
                from agentcoord.errors import InvalidArguments

                raise InvalidArguments(
                    "answer ID TEXT; --repo and --session go with --allow-for DURATION"
                )
            return answer(cfg, ns.prompt, " ".join(ns.text), ns.json)
        if ns.command == "kubeconfig":
            import os

            from agentcoord.cli.views import refuse_agent_process
            from agentcoord.stores.objects.serve import kubeconfig_for

            # It carries the human's client credential (docs/security.md "Who a caller is").
            refuse_agent_process("print a kubeconfig", os.environ)
            if ns.write is None:
                sys.stdout.write(kubeconfig_for(cfg))
                return 0
            return _write_kubeconfig(kubeconfig_for(cfg), ns.write)
    except AgentCoordError as exc:
        print(f"agentcoord: {exc}", file=sys.stderr)
        return exit_code(exc)
    return EXIT_USAGE


def _write_kubeconfig(text: str, where: str) -> int:
    import shlex
    from pathlib import Path

    from agentcoord.stores.objects.serve import default_kubeconfig_file, write_kubeconfig

    path = write_kubeconfig(text, Path(where) if where else default_kubeconfig_file(Path.home()))
    print(f"wrote {path}", file=sys.stderr)
    # stdout is the one line to run (or eval), so `eval "$(agentcoord kubeconfig --write)"` works
    print(f"export KUBECONFIG={shlex.quote(str(path))}")
    return 0


def _console(cfg: Any, open_browser: bool, as_json: bool = False) -> int:
    import json
    import os

    from agentcoord.cli.views import console_link
    from agentcoord.kernel.timetext import human_time

    link, expires = console_link(cfg, os.environ)
    print(json.dumps({"url": link, "expires_at": expires}) if as_json else link)
    if not as_json:
        print(f"the link logs one browser in, once, until {human_time(expires)}", file=sys.stderr)
    if open_browser:
        import webbrowser

        # webbrowser.open is False when it found no browser to run (no BROWSER, no
        # DISPLAY/WAYLAND_DISPLAY browser, no text browser on PATH): say so, not nothing.
        if not webbrowser.open(link):
            print(
                "agentcoord: no browser found (set BROWSER to one); open the link above yourself",
                file=sys.stderr,
            )
    return 0


def _doctor(cfg: Any, as_json: bool) -> int:
    import json

    from agentcoord.cli.doctor import run_checks

    checks = run_checks(cfg)
    if as_json:
        print(json.dumps([c.as_dict() for c in checks], indent=2))
    else:
        for check in checks:
            mark = "info" if check.info else "ok  " if check.ok else "FAIL"
            print(f"{mark}  {check.name:<12} {check.detail}")
            if (check.info or not check.ok) and check.fix:
                print(f"      fix: {check.fix}")
    return 0 if all(c.ok for c in checks) else 1


def _setup(project: bool, remove: bool) -> int:
    import os
    import shutil
    from pathlib import Path

    from agentcoord.claude.configure import PORTABLE_COMMAND, remove_claude, setup_claude
    from agentcoord.kernel.config import load_config

    home = Path.home()
    claude_dir = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    where = Path.cwd() if project else None
    # The daemon's state dir (the human token, the NATS credentials) is kept out of reach
    # of the session's file tools by permission rules (docs/security.md).
    state_dir = load_config({}).state_dir
    # What each file was before setup, so --remove gives it back exactly; kept outside the
    # project (never committed), private like the rest of the state dir.
    backups = state_dir / "claude-setup"
    if remove:
        report = remove_claude(home, claude_dir, where, state_dir=state_dir, backups=backups)
    elif where is not None:
        # Project files are committed: a teammate's agentcoord is on their PATH, or named by
        # $AGENTCOORD_BIN (claude_setup.PORTABLE_COMMAND), never this machine's venv.
        report = setup_claude(
            home, claude_dir, PORTABLE_COMMAND, where, state_dir=state_dir, backups=backups
        )
        print(f"the project's files run {PORTABLE_COMMAND}: agentcoord on PATH, or $AGENTCOORD_BIN")
    else:
        # This install's own script first: a venv's bin need not be on the PATH Claude Code
        # starts servers and hooks with (README quick start: .venv/bin/agentcoord).
        own = Path(sys.executable).parent / "agentcoord"
        command = str(own) if own.is_file() else shutil.which("agentcoord") or "agentcoord"
        report = setup_claude(
            home, claude_dir, command, where, state_dir=state_dir, backups=backups
        )
    for path in report.removed:
        print(f"removed {path}")
    for path in report.created:
        print(f"created {path}")
    for path in report.changed:
        print(f"updated {path}")
    for path in report.unchanged:
        print(f"unchanged {path}")
    if report.denied:
        verb = "no longer denies" if remove else "denies"
        print(f"Claude Code {verb} its file tools the daemon's state dir (permissions.deny):")
        for rule in report.denied:
            print(f"  {rule}")
    return 0


def _setup_cli(cli: str, project: bool, remove: bool) -> int:
    """``setup codex|gemini|opencode [--project] [--remove]``: the MCP server in that CLI's
    file (docs/other-clis.md "Setup")."""
    import os
    import shutil
    from pathlib import Path

    from agentcoord.codex import codexsetup as codex
    from agentcoord.gemini import geminisetup as gemini
    from agentcoord.kernel.config import load_config
    from agentcoord.opencode import opencodesetup as opencode

    home = Path.home()
    where = Path.cwd() if project else None
    if where is not None:
        command = "agentcoord"  # a committed file: the teammate's agentcoord on PATH
    else:
        # This install's own script first: a venv's bin need not be on the CLI's PATH.
        own = Path(sys.executable).parent / "agentcoord"
        command = str(own) if own.is_file() else shutil.which("agentcoord") or "agentcoord"
    # What the file was before setup, kept outside the project, private.
    backups = load_config({}).state_dir / f"{cli}-setup"
    if cli == "codex":
        path = codex.config_file(home, os.environ, where)
        done = (
            codex.remove_codex(path, backups)
            if remove
            else codex.setup_codex(path, command, backups)
        )
    elif cli == "gemini":
        path = gemini.settings_file(home, where)
        done = (
            gemini.remove_gemini(path, backups)
            if remove
            else gemini.setup_gemini(path, command, backups)
        )
    else:
        path = opencode.config_file(home, os.environ, where)
        plugin = opencode.plugin_file(path, where)
        if remove:
            plugin_done = opencode.remove_plugin(plugin, backups)
            done = opencode.remove_opencode(path, backups)
        else:
            done = opencode.setup_opencode(path, command, backups)
            plugin_done = opencode.setup_plugin(plugin, command, backups)
        print(f"{done} {path}")
        path, done = plugin, plugin_done
    print(f"{done} {path}")
    return 0


def _setup_git(repo: str | None, remove: bool) -> int:
    """``setup git [REPO] [--remove]``: the pre-commit and pre-push guards (docs/claims.md
    "Commit guard", "Push guard")."""
    from pathlib import Path

    from agentcoord.gitguard.commitguard import GUARDS, install_guard, remove_guard
    from agentcoord.gitguard.movehook import MODE_KEY, MOVE_GUARDS  # checkout, ref guards

    where = Path(repo) if repo else Path.cwd()
    for guard in (*GUARDS, *MOVE_GUARDS):
        report = remove_guard(where, guard) if remove else install_guard(where, guard=guard)
        name = f"{guard.what} guard"
        if report.action == "absent":
            print(f"no agentcoord {name} in {report.hook}")
        elif report.action == "removed":
            print(f"removed the {name} from {report.hook}")
            if report.restored:
                print(f"restored the {guard.hook} hook it ran first: {report.hook}")
        else:
            done = {"installed": "installed", "updated": "updated"}.get(report.action)
            print(f"{done} the {name}: {report.hook}" if done else f"already there: {report.hook}")
            if report.chained is not None:
                print(f"it runs the previous {guard.hook} hook first: {report.chained}")
            if guard in MOVE_GUARDS:
                print(f"it warns; to refuse resets: git config {MODE_KEY} refuse")
            else:
                print(f"override for one {guard.what}: {guard.allow_env}=1 git {guard.what} ...")
    return EXIT_OK


def _setup_plugin(project: bool, remove: bool) -> int:
    """``setup claude --plugin [--project] [--remove]``: the plugin through the real
    ``claude plugin`` commands (docs/plugin.md "The Claude Code plugin")."""
    import os
    from pathlib import Path

    from agentcoord.claude.plugin import PLUGIN_ID, install_plugin, remove_plugin, set_up_directly
    from agentcoord.kernel.config import load_config

    home = Path.home()
    claude_dir = Path(os.environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    where = Path.cwd() if project else None
    state_dir = load_config({}).state_dir
    if remove:
        report = remove_plugin(os.environ, claude_dir, state_dir, where)
    else:
        report = install_plugin(os.environ, claude_dir, state_dir, where)
    for line in report.done:
        print(line)
    for path in report.restored:
        print(f"restored {path}")
    for path in report.removed:
        print(f"removed {path}")
    for path in report.kept:
        print(f"left {path} as Claude Code wrote it (edited since the install)")
    if not remove:
        print(f"{PLUGIN_ID} loads at the next Claude Code session start (or /reload-plugins)")
        if set_up_directly(home, claude_dir):  # both would run: two servers, hooks twice
            print("agent-coord is set up directly too: `agentcoord setup claude --remove` ends it")
    return EXIT_OK


def _install(remove: bool, enable: bool, as_json: bool = False) -> int:
    import json
    import os

    from agentcoord.cli.systemd_units import install_user_units, remove_user_units

    report = (
        remove_user_units(os.environ) if remove else install_user_units(os.environ, enable=enable)
    )
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        for path in report.written:
            print(("removed " if remove else "wrote ") + str(path))
        if not report.error:
            print(report.message)
    if report.error:  # units written but not enabled: the daemon will not start on its own
        print(f"agentcoord: {report.error}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _serve(cfg: Any) -> int:
    import logging
    import traceback

    import uvloop

    from agentcoord.daemon.run import serve
    from agentcoord.errors import AgentCoordError

    logging.basicConfig(
        level=getattr(logging, str(cfg.log_level).upper(), logging.INFO),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # nats-py logs every reconnect attempt at ERROR; ours say it once.
    logging.getLogger("nats").setLevel(logging.CRITICAL)
    # lightkube's HTTP client (--store kubernetes) logs every request at INFO.
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    debug = str(cfg.log_level).upper() == "DEBUG"
    try:
        uvloop.run(serve(cfg))
    except AgentCoordError:
        if debug:
            traceback.print_exc()
        raise
    except Exception as exc:
        # Never a bare traceback: one line, the details kept in the state dir.
        from agentcoord.daemon.startup import write_failure

        if debug:
            traceback.print_exc()
        where = write_failure(cfg.state_dir, exc)
        raise AgentCoordError(f"unexpected error: {exc!r} (details: {where})") from exc
    return 0


def _status(cfg: Any, as_json: bool) -> int:
    import json

    from agentcoord.client.rpc import call_unix
    from agentcoord.identity.humanproof import read_human_token

    status = call_unix(
        cfg.socket_path, "agentcoord/status", {}, token=read_human_token(cfg.state_dir)
    )
    if as_json:
        print(json.dumps(status, indent=2))
        return 0
    conns = status.get("connections", {})
    rows = [
        ("pid", status.get("pid")),
        ("version", status.get("version")),
        ("uptime", f"{status.get('uptime_s', 0):.1f}s"),
        ("health", status.get("health")),
        (
            "nats",
            f"{status.get('nats_url')} (pid {status.get('nats_pid')}, "
            f"restarts {status.get('nats_restarts')})",
        ),
        ("store", status.get("store_path")),
        ("socket", status.get("socket")),
        ("http", status.get("http_addr")),
        ("connections", f"unix {conns.get('unix', 0)}, http {conns.get('http', 0)}"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key.ljust(width)}  {value}")
    return 0


def _view_args(ns: Any) -> dict[str, Any]:
    """The tool arguments a view's flags stand for."""
    if ns.command == "prompts":
        return {"all": ns.all}
    if ns.command == "agents":  # live agents, or every one (ended sessions too)
        return {"status": "all"} if ns.all else {}
    if ns.command == "claims":
        return {"prefix": ns.prefix}
    if ns.command == "audit":
        args = {"since": ns.since, "actor": ns.actor, "type": ns.event_type, "limit": ns.limit}
        return {k: v for k, v in args.items() if v}
    return {}


if __name__ == "__main__":
    raise SystemExit(main())
