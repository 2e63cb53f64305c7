"""Which git commands a Bash command line runs, where, and what each does to its worktree
(docs/claims.md "Working-tree guard"): a table of command lines, parsed by a real shell
parser, and of git invocations sorted into moves, stages-all or harmless."""

from __future__ import annotations

import pytest

from agentcoord.leases.shellgit import GitCall, git_calls
from agentcoord.leases.treeguard import tree_effect

pytestmark = pytest.mark.unit

LINES = [
    # (line, [(cwd, work tree, subcommand, args)])
    ("git checkout main", [("/w", None, "checkout", ("main",))]),
    ("cd ../app && git switch dev", [("/app", None, "switch", ("dev",))]),
    (
        "cd x && git -C y stash; git status",
        [("/w/x/y", None, "stash", ()), ("/w/x", None, "status", ())],
    ),
    (
        "(cd a; git reset --hard) && git add -A",
        [("/w/a", None, "reset", ("--hard",)), ("/w", None, "add", ("-A",))],
    ),
    ("echo hi | (cd sub && git pull)", [("/w/sub", None, "pull", ())]),
    ("cd sub | true; git pull", [("/w", None, "pull", ())]),  # a pipe's cd stays in it
    ("{ cd sub; }; git merge x", [("/w/sub", None, "merge", ("x",))]),
    ("FOO=1 GIT_WORK_TREE=/t git commit -am 'x y'", [("/w", "/t", "commit", ("-am", "x y"))]),
    ("git --no-pager -c a=b --work-tree=../t log", [("/w", "/t", "log", ())]),
    ("git -C/abs clean -fd", [("/abs", None, "clean", ("-fd",))]),
    ("bash -c 'cd /q && git checkout x'", [("/q", None, "checkout", ("x",))]),
    ("sudo -u me env A=1 git switch dev", [("/w", None, "switch", ("dev",))]),
    ("if true; then git pull; fi", [("/w", None, "pull", ())]),
    ("for f in a b; do git restore $f; done", [("/w", None, "restore", ("$f",))]),
    ("echo $(git stash)", [("/w", None, "stash", ())]),
    ("cd $X && git clean -fd", [(None, None, "clean", ("-fd",))]),
    ("cat <<EOF\nx\nEOF\ngit stash pop", [("/w", None, "stash", ("pop",))]),
    (
        "git add -A && git commit -m \"$(cat <<'EOF'\nFix it's parser\n\nEOF\n)\"",
        [("/w", None, "add", ("-A",)), ("/w", None, "commit", ("-m", "$(cat \n)"))],
    ),
    ('cat > x <<-"END"\n\tgit checkout y\n\tEND\ngit stash', [("/w", None, "stash", ())]),
    ("echo '<<EOF' && git pull", [("/w", None, "pull", ())]),  # no body follows: kept
    ("echo git checkout main", []),  # an argument, not a command
    ("ls -la", []),
]


@pytest.mark.parametrize(("line", "want"), LINES)
def test_git_calls(
    line: str, want: list[tuple[str | None, str | None, str, tuple[str, ...]]]
) -> None:
    """Each git run of the line, with the directory it runs in after every cd, -C and work
    tree before it."""
    got = [(c.cwd, c.work_tree, c.sub, c.args) for c in git_calls(line, "/w")]
    assert got == want


EFFECTS = [
    ("checkout other", "moves"),
    ("checkout -- .", "moves"),
    ("checkout -b new", "moves"),
    ("checkout", None),
    ("switch dev", "moves"),
    ("stash", "moves"),
    ("stash pop", "moves"),
    ("stash list", None),
    ("stash show -p", None),
    ("reset --hard HEAD~1", "moves"),
    ("reset", "moves"),
    ("clean -fd", "moves"),
    ("clean -nd", None),
    ("clean --dry-run", None),
    ("restore src/a.py", "moves"),
    ("rebase main", "moves"),
    ("merge feature", "moves"),
    ("pull", "moves"),
    ("cherry-pick abc", "moves"),
    ("add -A", "stages-all"),
    ("add --all", "stages-all"),
    ("add .", "stages-all"),
    ("add -u", "stages-all"),
    ("add :/", "stages-all"),
    ("add src/a.py", None),
    ("commit -a -m x", "stages-all"),
    ("commit -am x", "stages-all"),
    ("commit -ma", None),  # the message is "a"
    ("commit -m x", None),
    ("commit -- -a", None),
    ("status", None),
    ("log --all", None),
    ("diff", None),
    ("checkout --help", None),
    ("worktree remove ../other", "moves"),
    ("worktree move --force ../other ../elsewhere", "moves"),
    ("worktree list", None),
]


@pytest.mark.parametrize(("cmd", "want"), EFFECTS)
def test_tree_effect(cmd: str, want: str | None) -> None:
    """Moves rewrite the tree's branch or files, stages-all takes every change; reading and
    naming paths is neither."""
    sub, *args = cmd.split()
    assert tree_effect(GitCall("/w", None, sub, tuple(args))) == want


def test_the_call_reads_as_a_command() -> None:
    """A call is shown to people as the git command it is, quoted where needed."""
    assert GitCall("/w", None, "commit", ("-m", "a b")).text == "git commit -m 'a b'"
