"""Where clients look for the daemon (docs/daemon.md "Finding the daemon"): the order of the
runtime dirs, and when the daemon's pointer is trusted. Pure resolution over temp dirs; the
fallback roots come from the config file, never the real /run/user or /tmp."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentcoord.kernel.locate import (
    default_runtime_dir,
    locate,
    pointer_path,
    read_pointer,
    settled,
    write_pointer,
)

pytestmark = pytest.mark.unit

UID = os.getuid()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HOME whose config file points the /run/user and /tmp roots into the test."""
    home = tmp_path / "home"
    config = home / ".config" / "agentcoord" / "config.toml"
    config.parent.mkdir(parents=True)
    (tmp_path / "run-user").mkdir()
    (tmp_path / "tmp").mkdir()
    config.write_text(f'runtime_roots = ["{tmp_path / "run-user"}", "{tmp_path / "tmp"}"]\n')
    return home


def test_the_order_of_the_runtime_dirs(home: Path, tmp_path: Path) -> None:
    """$AGENTCOORD_RUNTIME_DIR, then the config file's runtime_dir, then $XDG_RUNTIME_DIR,
    then /run/user/$UID when it is the user's, then /tmp/agentcoord-$UID."""
    env = {"HOME": str(home)}
    assert default_runtime_dir(env, UID) == tmp_path / "tmp" / f"agentcoord-{UID}"
    run_user = tmp_path / "run-user" / str(UID)
    run_user.mkdir(mode=0o700)
    assert default_runtime_dir(env, UID) == run_user / "agentcoord"
    env["XDG_RUNTIME_DIR"] = "/xdg"
    assert default_runtime_dir(env, UID) == Path("/xdg/agentcoord")
    config = home / ".config" / "agentcoord" / "config.toml"
    config.write_text(config.read_text() + 'runtime_dir = "/from-file"\n')
    assert default_runtime_dir(env, UID) == Path("/from-file")
    env["AGENTCOORD_RUNTIME_DIR"] = "/from-env"
    assert default_runtime_dir(env, UID) == Path("/from-env")


def test_a_run_user_dir_that_is_not_the_users_alone_is_passed_over(
    home: Path, tmp_path: Path
) -> None:
    """/run/user/$UID owned by another uid, or writable by others, is not used."""
    env = {"HOME": str(home)}
    run_user = tmp_path / "run-user" / str(UID + 1)
    run_user.mkdir(mode=0o700)  # ours, under another uid's name
    assert default_runtime_dir(env, UID + 1) == tmp_path / "tmp" / f"agentcoord-{UID + 1}"
    mine = tmp_path / "run-user" / str(UID)
    mine.mkdir()
    mine.chmod(0o777)
    assert default_runtime_dir(env, UID) == tmp_path / "tmp" / f"agentcoord-{UID}"


def _point(home: Path, runtime: Path, state: Path) -> Path:
    path = pointer_path({"HOME": str(home)}, UID)
    write_pointer(path, UID, runtime, state)
    return path


def test_the_pointer_is_written_private_and_read_back(home: Path, tmp_path: Path) -> None:
    """The pointer is 0600 in a 0700 dir and names the runtime and state dirs."""
    path = _point(home, tmp_path / "r", tmp_path / "s")
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert read_pointer({"HOME": str(home)}, UID) == (tmp_path / "r", tmp_path / "s")


@pytest.mark.parametrize("spoil", ["file-mode", "dir-mode", "host", "link", "garbage"])
def test_a_pointer_that_cannot_be_trusted_is_ignored(
    home: Path, tmp_path: Path, spoil: str
) -> None:
    """A pointer others may write, in a dir others may write, from another host, through a
    symlink, or unreadable, is not followed."""
    path = _point(home, tmp_path / "r", tmp_path / "s")
    if spoil == "file-mode":
        path.chmod(0o666)
    elif spoil == "dir-mode":
        path.parent.chmod(0o777)
    elif spoil == "host":
        record = json.loads(path.read_text())
        path.write_text(json.dumps({**record, "host": "elsewhere.invalid"}))
    elif spoil == "link":
        real = tmp_path / "real.json"
        path.rename(real)
        path.symlink_to(real)
    else:
        path.write_text("{not json")
    assert read_pointer({"HOME": str(home)}, UID) is None


def test_locate_follows_the_pointer_after_the_environments_dir(home: Path, tmp_path: Path) -> None:
    """With no dir named, the environment's dir is tried first, then the pointer's, and a
    start goes to the pointer's dirs; a client that names its dir or another state dir does
    not follow it."""
    runtime, state = tmp_path / "r", tmp_path / "s"
    _point(home, runtime, state)
    env = {"HOME": str(home), "XDG_RUNTIME_DIR": str(tmp_path / "xdg")}
    found = locate(env, UID)
    assert found.candidates == (tmp_path / "xdg" / "agentcoord", runtime)
    assert (found.start_runtime, found.start_state) == (runtime, state)
    assert not found.explicit
    named = locate({**env, "AGENTCOORD_RUNTIME_DIR": "/mine"}, UID)
    assert named.candidates == (Path("/mine"),)
    assert named.explicit
    other = locate({**env, "AGENTCOORD_STATE_DIR": str(tmp_path / "other")}, UID)
    assert other.candidates == (tmp_path / "xdg" / "agentcoord",)
    assert other.start_state is None


def test_settled_takes_the_pointer_only_where_a_daemon_is(home: Path, tmp_path: Path) -> None:
    """The CLI and `serve` take the pointer's dirs when its socket is there, and their
    environment's otherwise (a daemon started by hand keeps to its own dirs)."""
    import socket

    runtime, state = tmp_path / "r", tmp_path / "s"
    runtime.mkdir(mode=0o700)
    _point(home, runtime, state)
    env = {"HOME": str(home)}
    fallback = tmp_path / "tmp" / f"agentcoord-{UID}"
    assert settled(locate(env, UID), UID) == (fallback, None)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(runtime / "agentcoord.sock"))
        assert settled(locate(env, UID), UID) == (runtime, state)
