"""A stand-in for another agent CLI's process: runs a command as its child, so the child's
ancestry has a process named after the file (tests install this file as an executable named
``codex``, ``opencode`` or ``gemini``). The words before ``--`` stand for the CLI's own
arguments (``app-server``), and are otherwise ignored.

Usage: NAME [WORDS...] -- CMD [ARGS...]
"""

import subprocess
import sys


def main() -> int:
    args = sys.argv[1:]
    return subprocess.call(args[args.index("--") + 1 :])


if __name__ == "__main__":
    sys.exit(main())
