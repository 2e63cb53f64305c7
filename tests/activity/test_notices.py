"""Quiet hours and once-per-wait desktop notices (pure), and the notifier holding notices in
quiet hours."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agentcoord.activity import SessionState, StateChange
from agentcoord.activity.notices import NoticeGate, in_window, parse_quiet_hours
from agentcoord.console.desktop import DesktopNotifier
from agentcoord.errors import ConfigError


def test_quiet_hours_parse() -> None:
    """HH:MM-HH:MM parses to minutes; empty is never quiet; anything else says the form."""
    assert parse_quiet_hours("22:00-07:30") == (1320, 450)
    assert parse_quiet_hours(" 9:05 - 17:00 ") == (545, 1020)
    assert parse_quiet_hours("") is None
    for bad in ("22-7", "25:00-07:00", "22:00-07:61", "night"):
        with pytest.raises(ConfigError, match="notify_quiet_hours"):
            parse_quiet_hours(bad)


@pytest.mark.parametrize(
    ("window", "minute", "quiet"),
    [
        ((1320, 420), 1380, True),  # 23:00 in 22:00-07:00
        ((1320, 420), 60, True),  # 01:00
        ((1320, 420), 420, False),  # 07:00: the end is not quiet
        ((1320, 420), 720, False),  # noon
        ((540, 1020), 600, True),  # 10:00 in 09:00-17:00
        ((540, 1020), 1020, False),
        ((600, 600), 600, False),  # an empty window
        (None, 600, False),
    ],
)
def test_in_window(window: tuple[int, int] | None, minute: int, quiet: bool) -> None:
    """A window holds its start, not its end, and may cross midnight."""
    assert in_window(window, minute) is quiet


def test_gate_says_a_wait_once_until_repeat_passes() -> None:
    """The same key is admitted once per ``repeat`` seconds; another key is its own."""
    gate = NoticeGate(repeat=60)
    assert gate.admit(("a", "Bash"), 0.0)
    assert not gate.admit(("a", "Bash"), 59.0)
    assert gate.admit(("b", "Bash"), 59.0)
    assert gate.admit(("a", "Bash"), 61.0)


async def test_the_notifier_sends_nothing_in_quiet_hours(tmp_path: Path) -> None:
    """In quiet hours a new wait starts no notify-send; outside them the same wait does, once
    (the stand-in notify-send records its arguments)."""
    record = tmp_path / "notified"
    command = tmp_path / "notify-send"
    command.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {record}\n')
    command.chmod(0o755)
    now = time.time()
    local = time.localtime(now)
    minute = local.tm_hour * 60 + local.tm_min
    around = ((minute - 60) % 1440, (minute + 60) % 1440)
    change = StateChange("app-1", SessionState("waiting-input", now), "/w/app", "app")
    async with DesktopNotifier(None, str(command), quiet_hours=around) as quiet:
        quiet.session_waiting(change)
    assert not record.exists()
    async with DesktopNotifier(None, str(command)) as loud:
        loud.session_waiting(change)
        loud.session_waiting(change)  # the same wait: not again
    # leaving the notifier waits for the notice it started
    lines = record.read_text().splitlines()
    assert lines == [
        "--app-name=agentcoord",
        "agentcoord: app-1 (app) is waiting for input",
        "waiting for input",
    ]
