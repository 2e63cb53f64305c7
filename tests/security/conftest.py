"""Fixtures of the security pass: a tally of hostile attempts and how each was answered,
printed at the end of the run."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

ATTEMPTS: Counter[str] = Counter()
REFUSED: Counter[str] = Counter()
WORDS: dict[str, str] = {}


class Tally:
    """Count one hostile attempt of ``kind``; ``refused`` says whether it was refused."""

    def __call__(self, kind: str, refused: bool, word: str = "refused") -> bool:
        WORDS[kind] = word
        ATTEMPTS[kind] += 1
        REFUSED[kind] += int(refused)
        return refused


@pytest.fixture
def tally() -> Tally:
    return Tally()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not ATTEMPTS:
        return
    terminalreporter.section("security counts")
    for kind in sorted(ATTEMPTS):
        terminalreporter.write_line(
            f"{kind}: {ATTEMPTS[kind]} attempts, {REFUSED[kind]} {WORDS.get(kind, 'refused')}"
        )
    total, ok = sum(ATTEMPTS.values()), sum(REFUSED.values())
    terminalreporter.write_line(f"TOTAL: {total} attempts, {ok} refused or handled safely")
