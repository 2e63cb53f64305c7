"""The conflict watch's cost per file change (docs/claims.md "Conflicts between worktrees").

    PYTHONPATH=src python bench/conflicts.py [--n 200] [--files 2000]

Builds a repository of FILES files with two linked worktrees that share a changed file, and the
daemon's conflict watch (leases/conflictwatch.py) over two live sessions there (no daemon: the
notices go to a list). Then, alternating change by change: a file of one worktree is rewritten
and the watch handles that change (``ConflictWatch.changed``: which worktree, one ``git
status``, the pairs, the merge-tree cache, the notices), against a raw ``git status
--porcelain`` of the same worktree after the same rewrite. Prints p50/p99 and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_GIT = ["git", "-c", "user.name=b", "-c", "user.email=b@example.invalid"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run([*_GIT, *args], cwd=cwd, check=True, capture_output=True)


def make_repo(root: Path, files: int) -> tuple[Path, Path]:
    """A repository of ``files`` files on main and two linked worktrees, both changing
    ``shared.txt`` (so every recompute has a pair to judge)."""
    main = root / "app"
    (main / "src").mkdir(parents=True)
    for n in range(files):
        (main / "src" / f"m{n}.py").write_text(f"x = {n}\n")
    (main / "shared.txt").write_text("base\n")
    _git(main, "init", "-q", "-b", "main")
    _git(main, "add", ".")
    _git(main, "commit", "-q", "-m", "init")
    trees = []
    for name in ("x", "y"):
        tree = root / f"app-{name}"
        _git(main, "worktree", "add", "-q", "-b", name, str(tree))
        (tree / "shared.txt").write_text(f"{name}\n")
        trees.append(tree)
    return trees[0], trees[1]


class _Inboxes:
    def __init__(self) -> None:
        self.sent: list[str] = []

    async def deliver(self, to: str, msg: Any, msg_id: str | None = None) -> None:
        self.sent.append(to)

    def emit(self, event: str, agent: str, **data: Any) -> None:
        pass


def _tops(x: Path, y: Path) -> tuple[str, str]:
    return str(x.resolve()), str(y.resolve())


def _raw_status(tree: Path) -> None:
    """The baseline: git status as the watch asks it, run straight from this thread."""
    subprocess.run(
        [
            "git",
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
        ],
        cwd=tree,
        check=True,
        capture_output=True,
    )


async def measure(x: Path, y: Path, n: int) -> dict[str, list[float]]:
    """Seconds per handled change (ours) and per raw ``git status`` (raw), alternating."""
    from agentcoord.leases.conflictwatch import ConflictWatch

    inboxes = _Inboxes()
    watch = ConflictWatch(lambda: {"a": str(x), "b": str(y)}, inboxes)
    await watch.follow_sessions()
    top, other = _tops(x, y)
    # The first round, both worktrees: refs, merge base, status; the pair is told.
    await watch.changed([f"{top}/shared.txt", f"{other}/shared.txt"])
    assert inboxes.sent, "the pair was not seen"
    ours: list[float] = []
    raw: list[float] = []
    target = x / "src" / "m1.py"
    for i in range(n):
        target.write_text(f"x = {i}\n")
        t0 = time.perf_counter()
        await watch.changed([f"{top}/src/m1.py"])
        ours.append(time.perf_counter() - t0)
        target.write_text(f"x = -{i}\n")
        t0 = time.perf_counter()
        _raw_status(x)
        raw.append(time.perf_counter() - t0)
    return {"ours": ours, "raw": raw}


def report(r: dict[str, list[float]]) -> list[tuple[str, float, str, float, str]]:
    """Rows: (figure, ours ms, baseline name, baseline ms, goal)."""
    ours, raw = statistics.median(r["ours"]) * 1000, statistics.median(r["raw"]) * 1000
    return [("conflict watch: one change handled, p50", ours, "raw git status", raw, "<= 1.5x")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        x, y = make_repo(Path(tmp), args.files)
        r = asyncio.run(measure(x, y, args.n))
    for name in ("ours", "raw"):
        s = sorted(r[name])
        p99 = s[min(len(s) - 1, int(len(s) * 0.99))] * 1000
        print(f"{name}: p50 {statistics.median(s) * 1000:.2f} ms, p99 {p99:.2f} ms (n={len(s)})")
    ((figure, ours, base_name, base, goal),) = report(r)
    print(f"{figure}: {ours:.2f} ms vs {base_name} {base:.2f} ms = {ours / base:.2f}x ({goal})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
