"""The checkout and ref guards that ``agentcoord setup git`` installs beside the commit and push
guards (docs/claims.md "Working-tree guard", "From a terminal or a script").

A terminal's or a script's ``git checkout`` and ``git reset`` pass no Claude Code hook; git's
own hooks see them (githooks(5)):

- ``post-checkout`` runs after a checkout or switch has changed the tree: it cannot stop it,
  so it warns, naming the other live sessions working in that worktree;
- ``reference-transaction`` runs in its ``prepared`` state before a ref update is written, and
  a non-zero exit aborts the update: it sees a reset (or ``checkout -B``, ``branch -f``) of
  the branch the worktree has checked out, or of a detached HEAD, and warns or, with ``git
  config agentcoord.treeGuard refuse``, refuses it. A commit or merge made on the branch (its
  new commit's parent is the old one) and an amend (same parents) are not moves. A branch switch
  rewrites the symbolic HEAD, which git before 2.45 does not pass through the transaction, so
  only ``post-checkout`` sees it.

Most ref updates are commits, fetches and pushes, so the ``reference-transaction`` hook's shell
part tells them from a move itself (at most ``git symbolic-ref`` and ``git show -s``) and starts
the interpreter only for a move. Both are the same small client as the commit guard
(:data:`agentcoord.gitguard.commitguard.SHARED`: no agentcoord import, ``-I -S``, builtin
modules only), chained and removed the same way, and fail open. They ask the daemon
``agentcoord/tree-check`` (:mod:`agentcoord.gitguard.treecheck`), which identifies the caller
from the socket.
"""

from __future__ import annotations

from agentcoord.gitguard.commitguard import SHARED, Guard
from agentcoord.gitguard.treecheck import MOVE_ENV

__all__ = ["CHECKOUT", "MODE_KEY", "MOVE_GUARDS", "REFS"]

MODE_KEY = "agentcoord.treeGuard"  # warn (the default) or refuse

_HEAD = r"""#!/bin/sh
@MARKER@: warns (or refuses, by configuration) when a @WHAT@ moves a worktree
# another live session works in (see "@SECTION@" in docs/claims.md). Installed by `agentcoord
# setup git`; undone by `agentcoord setup git --remove`. Override: @ALLOW_ENV@=1 git ...
''':'
py=@PYTHON@
[ -x "$py" ] || py=python3
if [ "@HOOK@" = reference-transaction ] && [ ! -x "${0%/*}/@CHAINED@" ]; then
  # Most ref updates are commits, fetches and pushes: the shell tells them from a move with at
  # most two git calls, and the interpreter starts only for a move (moved_refs, is_move below).
  [ "$1" = prepared ] || exit 0
  lines=$(cat)
  NL='
'
  branch=
  moved=
  while read -r old new ref; do
    [ "$old" = "$new" ] && continue
    case "$old$new" in *:*) continue ;; esac
    case "$old" in *[!0]*) ;; *) continue ;; esac
    case "$new" in *[!0]*) ;; *) continue ;; esac
    case "$ref" in HEAD|refs/heads/*) ;; *) continue ;; esac
    [ -n "$branch" ] || branch=$(git symbolic-ref -q HEAD || echo HEAD)
    [ "$ref" = "$branch" ] || continue
    parents=$(git show -s --format=%P "$new" "$old" 2>/dev/null) || { moved=1; break; }
    newp=${parents%%"$NL"*}
    oldp=${parents#*"$NL"}
    case " $newp " in *" $old "*) continue ;; esac
    [ "$newp" = "$oldp" ] && continue
    moved=1
    break
  done <<EOF
$lines
EOF
  [ -n "$moved" ] || exit 0
  printf '%s\n' "$lines" | "$py" -I -S "$0" "$@"
  exit $?
fi
exec "$py" -I -S "$0" "$@"
'''
"""

_BODY = r"""def git_out(argv):
    status, out = spawn(["git"] + argv, True)
    return out.decode("utf-8", "surrogateescape").strip() if status == 0 else None


def ask(what, refuse):
    q = _json.encode_basestring_ascii
    return ask_daemon(
        '{"jsonrpc":"2.0","id":1,"method":"agentcoord/tree-check","params":{"cwd":%s,'
        '"what":%s,"refuse":%s}}\n'
        % (q(posix.getcwd()), q(what), "true" if refuse else "false")
    )


def after_checkout(args):
    # githooks(5) "post-checkout": <previous HEAD> <new HEAD> <1: a branch checkout, 0: paths>.
    prev, new, flag = (list(args) + ["", "", ""])[:3]
    if not prev.strip("0"):
        return  # a new worktree or a clone: nobody worked in it yet
    if prev == new and flag == "1":
        # The same commit: `checkout -b` moved to a new branch, a checkout of the branch it is
        # on moved nothing (the branch before the last checkout, @{-1}, is this one).
        here = git_out(["rev-parse", "--abbrev-ref", "HEAD"])
        if here is None or here == git_out(["rev-parse", "--abbrev-ref", "@{-1}"]):
            return
    what = "`git checkout` of another branch" if flag == "1" else "`git checkout` of paths"
    result = ask(what, False)
    if not result.get("ok", True):
        say(result.get("message") or "agentcoord: another session works in this worktree")


def moved_refs(lines):
    # githooks(5) "reference-transaction": "<old> <new> <ref>" per line. The checked-out
    # branch's ref (or a detached HEAD) moved to another commit; created and deleted refs and
    # symbolic values ("ref:...") aside.
    wanted = []
    for line in lines.decode("utf-8", "surrogateescape").splitlines():
        words = line.split(" ")
        if len(words) != 3 or words[0] == words[1]:
            continue
        old, new, ref = words
        if not old.strip("0") or not new.strip("0") or ":" in old + new:
            continue
        if ref == "HEAD" or ref.startswith("refs/heads/"):
            wanted.append((old, new, ref))
    if not wanted:
        return []
    branch = git_out(["symbolic-ref", "-q", "HEAD"]) or "HEAD"
    return [w for w in wanted if w[2] == branch]


def is_move(old, new):
    # Not a move: a commit or merge made on it (the old commit is a parent of the new one),
    # or an amend (the same parents).
    parents = git_out(["show", "-s", "--format=%P", new, old])
    if parents is None:
        return True
    lines = parents.split("\n")
    new_parents = lines[0].split()
    old_parents = lines[1].split() if len(lines) > 1 else []
    return old not in new_parents and new_parents != old_parents


def before_ref_update(args, lines):
    if not args or args[0] != "prepared":
        return  # only a prepared transaction can still be stopped, and is seen once
    moved = moved_refs(lines)
    if not moved or not any(is_move(old, new) for old, new, _ in moved):
        return
    refuse = (git_out(["config", "--get", "@MODE_KEY@"]) or "warn").lower() == "refuse"
    if refuse and env("@ALLOW_ENV@") not in ("", "0"):
        say("agentcoord: @ALLOW_ENV@ is set: moving the worktree without asking")
        return
    ref = moved[0][2]
    what = "an update of HEAD" if ref == "HEAD" else "an update of " + ref.rpartition("/")[2]
    what += " (`git reset`, `checkout -B`, `branch -f`)"
    result = ask(what, refuse)
    if result.get("ok", True):
        return
    say(result.get("message") or "agentcoord: another session works in this worktree")
    if refuse:
        sys.exit(1)


def main():
    here = sys.argv[0].rpartition("/")[0] or "."
    chained = here + "/@CHAINED@"
    lines = read_stdin() if HOOK == "reference-transaction" else None
    if posix.access(chained, posix.X_OK):
        status = spawn([chained] + sys.argv[1:], False, lines)[0]
        if status:
            sys.exit(status)
    if HOOK == "post-checkout":
        after_checkout(sys.argv[1:])
    else:
        before_ref_update(sys.argv[1:], lines)


try:
    main()
except Exception as exc:  # a broken guard must not stop git: fail open, loudly
    off("the @WHAT@ guard failed (%r)" % (exc,))
"""

_TEMPLATE = _HEAD + SHARED + _BODY.replace("@MODE_KEY@", MODE_KEY)

CHECKOUT = Guard(
    "post-checkout",
    "# agentcoord checkout guard",
    "post-checkout.agentcoord-chained",
    "checkout",
    "checking out",
    "From a terminal or a script",
    template=_TEMPLATE,
    allow_env=MOVE_ENV,
)
REFS = Guard(
    "reference-transaction",
    "# agentcoord ref guard",
    "reference-transaction.agentcoord-chained",
    "ref update",
    "updating refs",
    "From a terminal or a script",
    template=_TEMPLATE,
    allow_env=MOVE_ENV,
)
MOVE_GUARDS = (CHECKOUT, REFS)
