"""The state dir's format version and the migrations from older ones.

``<state>/format.json`` = ``{"format": N, "written_by": "<version>"}``. A state dir without it
but with content was made by 0.1.0, which recorded nothing: format 0. Each migration takes a
dir from format N to N+1 and runs once, under the daemon's dir lock, before any part opens the
state. A format newer than this code knows is refused rather than misread
(docs/reliability.md "Downgrades").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from agentcoord import __version__
from agentcoord.errors import StateFormatError
from agentcoord.kernel.files import write_private

__all__ = ["FORMAT", "FORMAT_FILE", "ensure_format", "newer_format_message", "read_format"]

FORMAT = 2
FORMAT_FILE = "format.json"

# Files a daemon creates before it writes anything of substance: their presence alone does
# not make a dir "made by 0.1.0".
# (``claude-setup``: what ``agentcoord setup claude`` records before any daemon ran.)
_NOT_STATE = frozenset({"daemon.lock", FORMAT_FILE, "startup-error.log", "claude-setup"})


def _from_0(state_dir: Path) -> None:
    """0.1.0 -> 1: the layout is unchanged; what 1 adds is the record of the format itself.
    (Claim markers that aged out, the cause of 0.1.0's failed restarts, need no rewrite: the
    claims view now replays an empty bucket at any sequence.)"""


def _from_1(state_dir: Path) -> None:
    """1 -> 2: records are their objects' spec and status (docs/store.md "Records are
    objects"); format 1 kept each whole in one annotation. The objects are not rewritten here:
    the repository reads that annotation for the fields an object's spec/status lack and drops
    it at its next write of the object, which also covers objects a Kubernetes API server holds
    (``--store kubernetes``), out of this dir's reach. The step is the version itself: a
    format-1 daemon would not see a record written without the annotation, so it must refuse
    this dir rather than lose them."""


# MIGRATIONS[n] takes format n to n + 1.
MIGRATIONS: tuple[Callable[[Path], None], ...] = (_from_0, _from_1)
assert len(MIGRATIONS) == FORMAT


def read_format(state_dir: Path) -> tuple[int, str]:
    """The dir's format and the version that wrote it: ``(0, "0.1.0")`` for an unversioned
    dir with state in it, ``(FORMAT, __version__)`` for an empty one."""
    path = state_dir / FORMAT_FILE
    try:
        raw = path.read_text()
    except FileNotFoundError:
        try:
            used = any(p.name not in _NOT_STATE for p in state_dir.iterdir())
        except FileNotFoundError:
            used = False
        return (0, "0.1.0") if used else (FORMAT, __version__)
    except OSError as exc:
        raise StateFormatError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = json.loads(raw)
        fmt, by = data["format"], str(data.get("written_by", "?"))
        if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt < 0:
            raise TypeError(fmt)
    except (ValueError, KeyError, TypeError):
        raise StateFormatError(
            f"{path} is not a state format record; if the dir is agentcoord's, restore the "
            f'file as {{"format": {FORMAT}}}, else use another --state-dir'
        ) from None
    return fmt, by


def newer_format_message(state_dir: Path, fmt: int, by: str) -> str:
    """The refusal of a dir in a format newer than this code's: which format, that a newer
    agentcoord wrote it (a later build of the same version number says so), and what to do."""
    if by == __version__:
        # A development build of the same version number moved the format on: "upgrade to
        # 0.2.0" would read as nonsense to someone running 0.2.0.
        writer = f"a later build of agentcoord {by} than this one"
    else:
        writer = f"agentcoord {by}, newer than this agentcoord {__version__}"
    return (
        f"{state_dir} holds state format {fmt}, written by {writer}; this build reads state "
        f"formats up to {FORMAT}, and reading a newer one could lose what it holds: run the "
        "agentcoord that wrote it (or a later one), or point --state-dir elsewhere"
    )


def ensure_format(state_dir: Path) -> int:
    """Bring ``state_dir`` to :data:`FORMAT` (migrating in order) and record it; returns the
    format it had. Refuses a dir written in a newer format."""
    fmt, by = read_format(state_dir)
    if fmt > FORMAT:
        raise StateFormatError(newer_format_message(state_dir, fmt, by))
    for step in MIGRATIONS[fmt:]:
        step(state_dir)
    if fmt != FORMAT or not (state_dir / FORMAT_FILE).exists() or by != __version__:
        record = {"format": FORMAT, "written_by": __version__}
        write_private(state_dir / FORMAT_FILE, json.dumps(record) + "\n")
    return fmt
