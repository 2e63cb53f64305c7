"""Shared helpers for benchmarks: the human's login, medians, percentiles and a ratio table."""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agentcoord.client.rpc import LOGIN, call_unix
from agentcoord.errors import DaemonUnreachable
from agentcoord.identity.humanproof import HUMAN_TOKEN_FILE

__all__ = [
    "Figure",
    "figure_table",
    "fmt",
    "goal_met",
    "human_token",
    "login",
    "median_ms",
    "pct",
    "table",
    "wait_ready",
]


# -- the human's login (docs/security.md "Who a caller is") -----------------------------------
# Being the human takes proof: a same-uid process that maps to no agent is refused until its
# connection presents the human token, as the CLI does (agentcoord.client.rpc.call_unix). The
# benchmarks drive the daemon as the human from their own process, so every connection they
# open logs in first; blocking one-shot calls pass ``token=`` to ``call_unix`` instead.


def private_home(root: Path) -> dict[str, str]:
    """HOME and XDG_CONFIG_HOME under ``root`` for a benchmark's daemon and clients: a daemon
    writes its pointer file under HOME (docs/daemon.md), and a benchmark must leave the
    user's own pointer, and so the user's own daemon, alone."""
    home = root / "home"
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(root / "xdg")}


def human_token(state_dir: Path) -> str:
    """The human token the daemon keeps (0600) in its state dir: what the CLI reads."""
    return (state_dir / HUMAN_TOKEN_FILE).read_text().strip()


async def login(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, token: str) -> None:
    """Log a fresh unix-socket connection in as the human before any other request on it (the
    daemon takes ``agentcoord/login`` inline, so every later request sees the human)."""
    req = {"jsonrpc": "2.0", "id": "login", "method": LOGIN, "params": {"token": token}}
    writer.write(json.dumps(req).encode() + b"\n")
    line = await reader.readline()
    if not line:
        raise RuntimeError("the daemon closed the connection at login")
    reply = json.loads(line)
    if "error" in reply:
        raise RuntimeError(f"login as the human refused: {reply['error'].get('message')}")


def wait_ready(
    sock: Path, state_dir: Path, proc: subprocess.Popen[bytes], timeout: float = 20.0
) -> str:
    """Wait until the daemon's unix socket answers the human's ``ping``; the human token.

    ``http.addr`` is written just before the unix socket listens and ``human.token`` earlier
    still (daemon/run.py), so a ping that connects finds the token whole, while a client
    that waited for ``http.addr`` alone could still be refused the connection."""
    from agentcoord.kernel.busy import slack_now

    timeout *= slack_now()  # the daemon's own start-up bounds stretch alike
    deadline = time.monotonic() + timeout
    while True:
        try:
            token = human_token(state_dir)
            call_unix(sock, "ping", {}, token=token)
            return token
        except (DaemonUnreachable, OSError):
            code = proc.poll()
            if code is not None:
                why = state_dir / "startup-error.log"
                last = why.read_text().strip().splitlines()[-1:] if why.exists() else []
                raise RuntimeError(
                    f"the daemon exited {code} before it answered: {''.join(last)}"
                ) from None
            if time.monotonic() > deadline:
                proc.kill()  # a bench has no use for it; not left running behind the failure
                proc.wait()
                raise RuntimeError(f"the daemon did not answer within {timeout:.3g} s") from None
            time.sleep(0.02)  # a readiness poll of a child whose start we do not own


def median_ms(samples: Sequence[float]) -> float:
    return statistics.median(samples) * 1000


def pct(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def table(rows: Sequence[tuple[str, float, str, float, str]]) -> str:
    """rows: (figure, ours_ms, baseline name, baseline_ms, goal) -> a Markdown table."""
    out = [
        "| figure | ours (median) | raw baseline (median) | ratio | goal | met |",
        "|---|---|---|---|---|---|",
    ]
    for figure, ours, base_name, base, goal in rows:
        ratio = ours / base if base else float("inf")
        met = _met(goal, ours, ratio)
        cells = [
            figure,
            f"{ours:.1f} ms",
            f"{base_name}: {base:.1f} ms",
            f"{ratio:.2f}x",
            goal,
            met,
        ]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def _met(goal: str, ours_ms: float, ratio: float) -> str:
    goal = goal.strip()
    if goal.startswith("<=") and goal.endswith("ms"):
        return "yes" if ours_ms <= float(goal[2:-2]) else "no"
    if goal.startswith("<=") and goal.endswith("x"):
        return "yes" if ratio <= float(goal[2:-1]) else "no"
    return "-"


# -- the one report (bench/run) --------------------------------------------------------------


@dataclass
class Figure:
    """One row of an area's table. ``ours``/``base`` are None when not measured (a workload
    not on main yet, a tool missing on this machine); ``note`` says why."""

    figure: str
    ours: float | None
    base_name: str
    base: float | None
    unit: str  # "ms", "/s" or "MB"
    goal: str = "-"  # "<= 300 ms", "<= 3x", ">= 3000/s", ">= 0.5x", "<= 80 MB"
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.ours is None or not self.base:
            return None
        return self.ours / self.base

    @property
    def met(self) -> str:
        return goal_met(self.goal, self.ours, self.ratio)


def fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "ms":
        return f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms"
    if unit == "/s":
        return f"{value:,.0f}/s"
    return f"{value:.1f} {unit}"


def goal_met(goal: str, ours: float | None, ratio: float | None) -> str:
    """ "yes"/"no" for a goal like ``<= 300 ms``, ``>= 3000/s``, ``<= 3x``; "-" without one."""
    m = re.fullmatch(r"\s*(<=|>=)\s*([\d.,]+)\s*(ms|/s|MB|x)\s*", goal)
    if m is None or ours is None:
        return "-" if m is None else "not measured"
    op, number, unit = m.group(1), float(m.group(2).replace(",", "")), m.group(3)
    value = ratio if unit == "x" else ours
    if value is None:
        return "not measured"
    ok = value <= number if op == "<=" else value >= number
    return "yes" if ok else "no"


def figure_table(figures: Sequence[Figure]) -> str:
    """A Markdown table: figure, our median, raw baseline median, ratio, goal, met."""
    out = [
        "| figure | ours (median) | raw baseline (median) | ratio | goal | met |",
        "|---|---|---|---|---|---|",
    ]
    for f in figures:
        base = f"{f.base_name}: {fmt(f.base, f.unit)}" if f.base_name else "-"
        ratio = f"{f.ratio:.2f}x" if f.ratio is not None else "-"
        ours = fmt(f.ours, f.unit) + (f" ({f.note})" if f.note else "")
        out.append(f"| {f.figure} | {ours} | {base} | {ratio} | {f.goal} | {f.met} |")
    return "\n".join(out)
