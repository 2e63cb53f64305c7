"""``agentcoord install --user``: the systemd user units (the service-manager seam).

The unit texts live in ``systemd/`` of the source tree and are embedded here too, so an
installed wheel can write them; a test keeps the two copies identical.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "SERVICE_UNIT",
    "SOCKET_UNIT",
    "InstallReport",
    "install_user_units",
    "remove_user_units",
]

SERVICE_UNIT = """\
[Unit]
Description=agentcoord: coordination daemon for the coding agents on this machine
Requires=agentcoord.socket
After=agentcoord.socket

[Service]
Type=notify
NotifyAccess=main
ExecStart=@AGENTCOORD@ serve
Restart=on-failure
RestartSec=1
TimeoutStopSec=10
WatchdogSec=30
# Hardening that works in a user service (no mount or user namespaces needed).
UMask=0077
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes

[Install]
WantedBy=default.target
"""

SOCKET_UNIT = """\
[Unit]
Description=agentcoord MCP socket

[Socket]
ListenStream=%t/agentcoord/agentcoord.sock
FileDescriptorName=agentcoord.sock
SocketMode=0600
DirectoryMode=0700
Service=agentcoord.service

[Install]
WantedBy=sockets.target
"""


@dataclass
class InstallReport:
    """What install/remove did, and what the user still has to do."""

    unit_dir: Path
    written: list[Path]
    systemctl_ok: bool
    message: str
    error: str = ""  # set when the install failed: one line, what failed and what to do

    def as_dict(self) -> dict[str, Any]:
        return {
            "unit_dir": str(self.unit_dir),
            "written": [str(p) for p in self.written],
            "systemctl_ok": self.systemctl_ok,
            "message": self.message,
            "error": self.error or None,
        }


def unit_dir(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "systemd" / "user"


def _agentcoord_path() -> str:
    found = shutil.which("agentcoord")
    return found or f"{sys.executable} -m agentcoord"


def _systemctl(*args: str) -> tuple[bool, str]:
    if shutil.which("systemctl") is None:
        return False, "systemctl not found"
    try:
        out = subprocess.run(
            ["systemctl", "--user", *args], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    # One line: systemctl's own message can span several.
    return out.returncode == 0, " ".join((out.stderr or out.stdout).split())


def install_user_units(env: Mapping[str, str], *, enable: bool = True) -> InstallReport:
    """Write both units (ExecStart = this agentcoord) and enable the socket."""
    target = unit_dir(env)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (
        ("agentcoord.service", SERVICE_UNIT),
        ("agentcoord.socket", SOCKET_UNIT),
    ):
        path = target / name
        path.write_text(text.replace("@AGENTCOORD@", _agentcoord_path()))
        written.append(path)
    if not enable:
        return InstallReport(target, written, False, "units written; not enabled (--no-enable)")
    ok, why = _systemctl("daemon-reload")
    if ok:
        ok, why = _systemctl("enable", "--now", "agentcoord.socket")
    if ok:
        message = "enabled agentcoord.socket; the daemon starts on first connection"
        return InstallReport(target, written, ok, message)
    error = (
        f"units written, but enabling them failed (systemctl --user: {why}); "
        "run `systemctl --user daemon-reload && systemctl --user enable --now agentcoord.socket` "
        "in a login session, or start the daemon with `agentcoord serve`"
    )
    return InstallReport(target, written, ok, "units written; not enabled", error)


def remove_user_units(env: Mapping[str, str]) -> InstallReport:
    """Disable and delete both units."""
    target = unit_dir(env)
    ok, why = _systemctl("disable", "--now", "agentcoord.socket", "agentcoord.service")
    removed = []
    for name in ("agentcoord.service", "agentcoord.socket"):
        path = target / name
        if path.exists():
            path.unlink()
            removed.append(path)
    _systemctl("daemon-reload")
    message = "units removed" + ("" if ok else f" (systemctl --user: {why})")
    return InstallReport(target, removed, ok, message)
