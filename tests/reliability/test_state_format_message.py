"""A state dir of a newer format is refused with a message that makes sense to whoever reads it
(daemon/statefmt.py): it names the dir's format and that a newer agentcoord wrote it, and
never tells someone running 0.2.0 to "upgrade" to the version they run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentcoord import __version__
from agentcoord.daemon.statefmt import FORMAT, FORMAT_FILE, ensure_format
from agentcoord.errors import StateFormatError
from tests.conftest import make_env


def _refusal(state: Path, written_by: str) -> str:
    (state / FORMAT_FILE).write_text(json.dumps({"format": FORMAT + 1, "written_by": written_by}))
    with pytest.raises(StateFormatError) as err:
        ensure_format(state)
    return str(err.value)


def test_a_later_build_of_the_same_version_is_named_as_such(tmp_path: Path) -> None:
    """Written by a later build numbered like this one: no "upgrade agentcoord", the format
    and "a later build" named."""
    message = _refusal(tmp_path, __version__)
    assert "upgrade agentcoord" not in message
    assert f"state format {FORMAT + 1}" in message
    assert f"a later build of agentcoord {__version__}" in message
    assert f"up to {FORMAT}" in message


def test_a_newer_version_is_named_with_this_one(tmp_path: Path) -> None:
    """Written by 9.9.9: the message names both versions and what to do."""
    message = _refusal(tmp_path, "9.9.9")
    assert f"agentcoord 9.9.9, newer than this agentcoord {__version__}" in message
    assert "--state-dir" in message


def test_the_daemon_refuses_in_one_line(tmp_path: Path) -> None:
    """`agentcoord serve` on such a dir exits with that one line, leaving the dir as it was."""
    env = make_env(tmp_path)
    state = Path(env["AGENTCOORD_STATE_DIR"])
    state.mkdir(parents=True)
    record = json.dumps({"format": FORMAT + 1, "written_by": __version__})
    (state / FORMAT_FILE).write_text(record)
    out = subprocess.run(
        [sys.executable, "-m", "agentcoord", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert out.returncode != 0
    assert "a later build of agentcoord" in out.stderr, out.stderr
    assert "upgrade agentcoord" not in out.stderr
    assert (state / FORMAT_FILE).read_text() == record
