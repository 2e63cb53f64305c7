"""A new human prompt raises a desktop notification through notify-send, where it exists."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from tests.tools.session_helpers import finish, spawn_session


def test_prompt_notifies_desktop(daemon_factory: Any, claude_bin: Path, tmp_path: Path) -> None:
    """escalate -> notify-send is run with the asking agent and the question."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    record = tmp_path / "notified.txt"
    fake = bin_dir / "notify-send"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {record}\n')
    fake.chmod(0o755)
    d = daemon_factory("desk", PATH=f"{bin_dir}:{os.environ['PATH']}").start()
    proc = spawn_session(
        d, claude_bin, [("escalate", {"question": "Rotate the API keys?", "timeout_secs": 5})]
    )
    try:
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        lines = record.read_text().splitlines()
    finally:
        finish(proc)
    assert lines[0] == "--app-name=agentcoord"
    assert lines[1].startswith("agentcoord: ")
    assert lines[1].endswith(" asks")
    assert lines[2] == "Rotate the API keys?"
