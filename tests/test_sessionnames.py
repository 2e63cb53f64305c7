"""How a session agent is named: one pure rule (kernel/sessionnames.py) for both directories."""

from __future__ import annotations

import pytest

from agentcoord.kernel.directory import MemoryDirectory
from agentcoord.kernel.sessionnames import host_suffix, session_name, session_stem

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("base", "taken", "host", "name"),
    [
        ("app", set(), None, "app-1"),
        ("app", {"app-1"}, None, "app-2"),
        ("app", {"app-1", "app-2", "app-4"}, None, "app-3"),  # the smallest free number
        ("app", {"app-2"}, None, "app-1"),
        ("app", {"other-1"}, None, "app-1"),
        ("My Project", set(), None, "my-project-1"),
        ("my-project", {"my-project-1"}, None, "my-project-2"),  # another dir, same stem
        (None, set(), None, "session-1"),
        ("", {"session-1"}, None, "session-2"),
        ("__", set(), None, "session-1"),
        ("app", set(), "host-a", "app-1--host-a"),
        ("app", {"app-1--host-a"}, "host-a", "app-2--host-a"),
        ("app", {"app-1"}, "host-a", "app-1--host-a"),  # counted per host
        ("app", {"app-1--host-b"}, "host-a", "app-1--host-a"),
    ],
)
def test_session_name(base: str | None, taken: set[str], host: str | None, name: str) -> None:
    """A new session's name is its stem, the smallest number from 1 not taken, and its host."""
    assert session_name(base, taken, host) == name


@pytest.mark.parametrize(
    ("base", "stem"),
    [
        ("My Project", "my-project"),
        ("app.v2_final", "app-v2-final"),
        ("--x--", "x"),
        ("Ünïcode", "n-code"),
        ("a" * 50, "a" * 40),
        ("a" * 39 + "-b", "a" * 39),  # cut at 40, then no trailing dash
        ("", "session"),
        (None, "session"),
        ("/", "session"),
    ],
)
def test_session_stem_is_dns_label_safe(base: str | None, stem: str) -> None:
    """The readable part is lower-case a-z0-9 and dashes, at most 40 characters, never empty."""
    assert session_stem(base) == stem
    assert session_stem(stem) == stem  # making a stem safe again changes nothing


def test_host_suffix() -> None:
    """Only daemons sharing one NATS qualify names with their host."""
    assert host_suffix(None) == ""
    assert host_suffix("") == ""
    assert host_suffix("build-box") == "--build-box"


@pytest.mark.parametrize(
    ("native", "taken", "host", "name"),
    [
        ("app-7f", set(), None, "app-7f"),  # known: taken as it is
        ("app-7f", {"app-1"}, None, "app-7f"),
        ("app-7f", set(), "host-a", "app-7f--host-a"),  # a shared NATS still qualifies it
        ("app-7f", {"app-7f--host-b"}, "host-a", "app-7f--host-a"),
        (None, set(), None, "app-1"),  # unknown: the numbered name
        ("", set(), None, "app-1"),
        ("app-7f", {"app-7f"}, None, "app-1"),  # taken: the numbered name
        ("app-7f", {"app-7f--host-a"}, "host-a", "app-1--host-a"),
        ("App-7F", set(), None, "app-1"),  # invalid: not lower-case
        ("app.7f", set(), None, "app-1"),
        ("app--7f", set(), None, "app-1"),  # "--" is the host suffix's
        ("-app", set(), None, "app-1"),
        ("app-", set(), None, "app-1"),
        ("a" * 41, set(), None, "app-1"),  # longer than a stem
    ],
)
def test_session_name_takes_the_clis_own_name(
    native: str | None, taken: set[str], host: str | None, name: str
) -> None:
    """The CLI's name for a session is the agent's name when valid and free, else <stem>-<n>."""
    assert session_name("app", taken, host, native) == name


async def test_the_memory_directory_takes_the_clis_name_once() -> None:
    """The in-memory directory names a new session by its CLI's name when free, and never
    renames a session it knows."""
    d = MemoryDirectory()
    assert await d.session_agent((1, 1.0), "s1", "/w/app", "app", "app-7f") == "app-7f"
    assert await d.session_agent((2, 2.0), "s2", "/w/app", "app", "app-7f") == "app-1"
    assert await d.session_agent((3, 3.0), None, "/w/app", "app") == "app-2"
    assert await d.session_agent((3, 3.0), None, "/w/app", "app", "app-c4") == "app-2"
