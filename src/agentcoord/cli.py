"""The ``agentcoord`` command: serve, mcp, status, version, kubeconfig, crds.

Imports are deferred into each command so ``agentcoord mcp`` (started by every Claude Code
session) loads only the shim.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["mcp"] and len(args) == 1:
        from agentcoord.shim import run_shim

        return run_shim()
    return _main_full(args)


def _common(parser: Any) -> None:
    parser.add_argument("--state-dir", dest="state_dir", help="state directory")
    parser.add_argument("--runtime-dir", dest="runtime_dir", help="runtime directory (socket)")
    parser.add_argument("--config", dest="config_file", help="TOML config file")


def _main_full(args: list[str]) -> int:
    import argparse

    from agentcoord.errors import AgentCoordError

    parser = argparse.ArgumentParser(prog="agentcoord", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="run the daemon in the foreground")
    _common(p_serve)
    p_serve.add_argument("--http-addr", dest="http_addr", help="loopback host:port (:0 = any)")
    p_serve.add_argument("--nats-url", dest="nats_url", help="use this NATS instead of embedding")
    p_serve.add_argument("--log-level", dest="log_level", help="DEBUG, INFO, WARNING, ...")
    p_mcp = sub.add_parser("mcp", help="stdio MCP shim (what Claude Code launches)")
    p_mcp.add_argument("--runtime-dir", dest="runtime_dir", help="runtime directory (socket)")
    p_status = sub.add_parser("status", help="show the running daemon's status")
    _common(p_status)
    p_status.add_argument("--json", action="store_true", help="machine-readable output")
    sub.add_parser("version", help="print the version")
    p_kube = sub.add_parser("kubeconfig", help="print a kubeconfig for the running daemon")
    _common(p_kube)
    sub.add_parser("crds", help="print CustomResourceDefinition YAML for a real cluster")
    ns = parser.parse_args(args)
    try:
        if ns.command == "version":
            from agentcoord import __version__

            print(f"agentcoord {__version__}")
            return 0
        if ns.command == "crds":
            from agentcoord.stores.objects.discovery import crds_yaml

            sys.stdout.write(crds_yaml())
            return 0
        if ns.command == "mcp":
            from pathlib import Path

            from agentcoord.shim import run_shim

            return run_shim(Path(ns.runtime_dir) if ns.runtime_dir else None)
        flags = {k: v for k, v in vars(ns).items() if k not in ("command", "json")}
        from agentcoord.config import load_config

        cfg = load_config(flags)
        if ns.command == "serve":
            return _serve(cfg)
        if ns.command == "status":
            return _status(cfg, ns.json)
        if ns.command == "kubeconfig":
            from agentcoord.stores.objects.serve import kubeconfig_for

            sys.stdout.write(kubeconfig_for(cfg))
            return 0
    except AgentCoordError as exc:
        print(f"agentcoord: {exc}", file=sys.stderr)
        return 1
    return 2


def _serve(cfg: Any) -> int:
    import logging

    import uvloop

    from agentcoord.daemon.lifecycle import serve

    logging.basicConfig(
        level=getattr(logging, str(cfg.log_level).upper(), logging.INFO),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # nats-py logs every reconnect attempt at ERROR; ours say it once.
    logging.getLogger("nats").setLevel(logging.CRITICAL)
    uvloop.run(serve(cfg))
    return 0


def _status(cfg: Any, as_json: bool) -> int:
    import json

    from agentcoord.client import call_unix

    status = call_unix(cfg.socket_path, "agentcoord/status", {})
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


if __name__ == "__main__":
    raise SystemExit(main())
