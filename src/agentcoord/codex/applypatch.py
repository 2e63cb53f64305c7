"""The files a Codex ``apply_patch`` call changes, read from its patch text (its PreToolUse
hook gives the patch in ``tool_input.command``; docs/codex.md).

The patch format names each file on a header line: ``*** Add File: P``, ``*** Update File: P``
(with an optional ``*** Move to: Q`` after it), ``*** Delete File: P``.
"""

from __future__ import annotations

import re

__all__ = ["patch_paths"]

_HEADER = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)


def patch_paths(text: str) -> list[str]:
    """Every file the patch adds, updates, moves to or deletes, in order, each once."""
    return list(dict.fromkeys(m.group(1) for m in _HEADER.finditer(text)))
