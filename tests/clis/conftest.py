"""The real Codex, Gemini CLI and OpenCode binaries (npm packages pinned in ``.ci/run``), run
offline against the scripted model stand-ins of :mod:`tests.clis.model_apis`.

``.ci/run`` installs them under ``/opt/codex-<v>``, ``/opt/gemini-<v>`` and ``/opt/opencode-<v>``;
``AGENTCOORD_TEST_CODEX``, ``AGENTCOORD_TEST_GEMINI`` and ``AGENTCOORD_TEST_OPENCODE`` may name
other binaries of the same versions. Where one is missing its tests skip as a missing
dependency, which fails a CI run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clis.model_apis import ChatCompletions, GeminiAPI, Responses, Scripted

CODEX_VERSION = "0.171"
GEMINI_VERSION = "0.61"
OPENCODE_VERSION = "1.18"

_BINARIES = {
    "codex": ("AGENTCOORD_TEST_CODEX", f"/opt/codex-{CODEX_VERSION}/bin/codex", "@openai/codex",
              CODEX_VERSION),
    "gemini": ("AGENTCOORD_TEST_GEMINI", f"/opt/gemini-{GEMINI_VERSION}/bin/gemini",
               "@google/gemini-cli", GEMINI_VERSION),
    "opencode": ("AGENTCOORD_TEST_OPENCODE", f"/opt/opencode-{OPENCODE_VERSION}/bin/opencode",
                 "opencode-ai", OPENCODE_VERSION),
}  # fmt: skip


def binary(cli: str) -> Path:
    """The pinned ``cli`` binary, or a skip naming how to install it."""
    var, default, package, version = _BINARIES[cli]
    path = Path(os.environ.get(var) or default)
    install = f"npm install -g --prefix /opt/{cli}-{version} {package}@{version}"
    if not os.access(path, os.X_OK):
        pytest.skip(f"{cli} {version} is not installed ({install})")
    out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=60)
    if version not in out.stdout:
        pytest.skip(f"{cli} {version} is not installed ({path} is {out.stdout.strip()!r})")
    return path


@pytest.fixture(scope="session")
def real_codex() -> Path:
    return binary("codex")


@pytest.fixture(scope="session")
def real_gemini() -> Path:
    return binary("gemini")


@pytest.fixture(scope="session")
def real_opencode() -> Path:
    return binary("opencode")


def _serve(api: Scripted) -> Iterator[Scripted]:
    api.start()
    try:
        yield api
    finally:
        api.stop()


@pytest.fixture
def responses_api() -> Iterator[Scripted]:
    yield from _serve(Responses())


@pytest.fixture
def gemini_api() -> Iterator[Scripted]:
    yield from _serve(GeminiAPI())


@pytest.fixture
def chat_api() -> Iterator[Scripted]:
    yield from _serve(ChatCompletions())
