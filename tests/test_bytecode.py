"""agentcoord.kernel.bytecode: bytecode in a private cache tree where the environment
turns it off."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Daemon

_PROBE = """
import json, sys
from agentcoord.kernel.bytecode import use_private_bytecode_cache
used = use_private_bytecode_cache()
import agentcoord.leases.filekeys  # a module imported after the call
print(json.dumps({"used": used, "prefix": sys.pycache_prefix,
                  "dont_write": sys.dont_write_bytecode}))
"""


def _probe(tmp_path: Path, **env: str) -> dict[str, object]:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
        and not k.startswith("AGENTCOORD_")
    }
    base["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    base.update(env)
    out = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=base,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _mirrored(prefix: Path, module_file: str) -> Path:
    """Where ``sys.pycache_prefix`` puts a source file's bytecode (importlib's mirror tree)."""
    src = Path(module_file).resolve()
    tag = sys.implementation.cache_tag
    return prefix / str(src.parent).lstrip("/") / f"{src.stem}.{tag}.pyc"


@pytest.mark.unit
def test_bytecode_goes_to_a_private_mirror_when_writing_is_off(tmp_path: Path) -> None:
    """With PYTHONDONTWRITEBYTECODE set, later imports write bytecode under the 0700 cache dir."""
    import agentcoord.leases.filekeys

    res = _probe(tmp_path, PYTHONDONTWRITEBYTECODE="1")
    cache = tmp_path / "cache" / "agentcoord" / "pycache"
    assert res == {"used": str(cache), "prefix": str(cache), "dont_write": False}
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert _mirrored(cache, agentcoord.leases.filekeys.__file__).is_file()


@pytest.mark.unit
@pytest.mark.parametrize(
    "env",
    [
        {},  # writing is on: the normal __pycache__ is used
        {"PYTHONDONTWRITEBYTECODE": "1", "AGENTCOORD_NO_BYTECODE_CACHE": "1"},
        {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/nonexistent-prefix"},
    ],
    ids=["writing-on", "opted-out", "explicit-prefix"],
)
def test_environment_choices_are_left_alone(tmp_path: Path, env: dict[str, str]) -> None:
    """Writing on, the opt-out, or an explicit PYTHONPYCACHEPREFIX: nothing is changed."""
    res = _probe(tmp_path, **env)
    assert res["used"] is None
    assert res["prefix"] == env.get("PYTHONPYCACHEPREFIX")
    assert not (tmp_path / "cache" / "agentcoord").exists()


@pytest.mark.unit
def test_a_cache_dir_that_cannot_be_made_changes_nothing(tmp_path: Path) -> None:
    """XDG_CACHE_HOME is a file: imports still work, bytecode writing stays off."""
    blocker = tmp_path / "cache"
    blocker.write_text("not a dir")
    res = _probe(tmp_path, PYTHONDONTWRITEBYTECODE="1")
    assert res == {"used": None, "prefix": None, "dont_write": True}


def test_a_daemon_start_leaves_its_modules_compiled_for_the_next(
    daemon_factory: object, tmp_path: Path
) -> None:
    """``agentcoord serve`` with writing off leaves the composition's bytecode in the cache."""
    import agentcoord.daemon.compose

    cache_home = tmp_path / "daemon-cache"
    d: Daemon = daemon_factory(  # type: ignore[operator]
        PYTHONDONTWRITEBYTECODE="1", XDG_CACHE_HOME=str(cache_home)
    )
    d.start()
    cache = cache_home / "agentcoord" / "pycache"
    assert _mirrored(cache, agentcoord.daemon.compose.__file__).is_file()
