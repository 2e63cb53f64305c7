"""A pytest plugin that closes every run with what was skipped and why, grouped by reason.

A skip for a missing dependency (a system package such as bubblewrap or chromium, a command,
an importable module) is counted apart from opt-in skips (``--soak``) and from skips the
machine forces (not root, no tmpfs). With ``CI=true`` in the environment a missing-dependency
skip fails the run: CI installs every dependency first (``.ci/run``), so such a skip means a
test silently did not run.

Skip reasons follow one wording so they can be told apart: ``"<what> not installed"`` (or
``not found`` / ``absent``, as ``shutil.which`` checks say; ``importorskip``'s ``could not
import``) for a missing dependency. A test (or fixture) that starts one of the suite's system
commands (:data:`SYSTEM_COMMANDS`) where it is not on PATH is skipped the same way, so none
hard-fails on a missing package. Registered by ``tests/conftest.py``; usable on its own with
``-p tests._skips``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter
from collections.abc import Generator

import pytest

__all__ = ["is_missing_dependency", "kind_of"]

_MISSING = re.compile(
    r"\bnot installed\b|\bnot found\b|\babsent\b|could not import|no module named", re.I
)
_OPT_IN = re.compile(r"--soak\b|\bonly with\b", re.I)
_skipped: Counter[str] = Counter()


def is_missing_dependency(reason: str) -> bool:
    """True when ``reason`` says a package, command or module is missing."""
    return bool(_MISSING.search(reason)) and not _OPT_IN.search(reason)


def kind_of(reason: str) -> str:
    if _OPT_IN.search(reason):
        return "opt-in"
    return "missing dependency" if is_missing_dependency(reason) else "not possible here"


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return str(text).removeprefix("Skipped: ").strip()


def pytest_configure(config: pytest.Config) -> None:
    _skipped.clear()  # one count per session


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped[_reason(report)] += 1


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.skipped:  # a whole module skipped (importorskip, allow_module_level)
        _skipped[_reason(report)] += 1


# The system packages the suite starts by name; running one that is not installed is a
# missing dependency (skip, named), not a failure, wherever a test forgot to check first.
SYSTEM_COMMANDS = {
    "bwrap": "bubblewrap",
    "chromium": "chromium",
    "kubectl": "kubectl",
    "tmux": "tmux",
    "systemd-analyze": "systemd",
}


def _missing_command(exc: BaseException) -> str | None:
    name = getattr(exc, "filename", None)
    if not isinstance(exc, FileNotFoundError) or not isinstance(name, str):
        return None
    base = os.path.basename(name)
    if base in SYSTEM_COMMANDS and shutil.which(base) is None:
        return base
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None]:
    return (yield from _skip_missing_commands())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None]:
    return (yield from _skip_missing_commands())


def _skip_missing_commands() -> Generator[None]:
    try:
        return (yield)
    except FileNotFoundError as exc:
        name = _missing_command(exc)
        if name is None:
            raise
        pytest.skip(f"{SYSTEM_COMMANDS[name]} not installed ({name} is not on PATH)")


def _missing() -> int:
    return sum(n for reason, n in _skipped.items() if is_missing_dependency(reason))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _ci() and _missing() and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> Generator[None]:
    # Outermost wrapper: written after pytest's own short summary, just above the final line.
    yield
    if not _skipped:
        return
    terminalreporter.write_sep("=", "skipped, by reason")
    for reason, n in sorted(_skipped.items(), key=lambda item: (kind_of(item[0]), -item[1])):
        terminalreporter.write_line(f"{n:5d} {kind_of(reason)}: {reason}")
    missing = _missing()
    if missing and _ci():
        terminalreporter.write_line(
            f"CI=true: {missing} test(s) skipped for a missing dependency; install it "
            "(.ci/run does) - the run fails",
            red=True,
            bold=True,
        )
    elif missing:
        terminalreporter.write_line(
            f"{missing} test(s) did not run for a missing dependency (.ci/run installs them); "
            "with CI=true this fails the run",
            yellow=True,
        )
