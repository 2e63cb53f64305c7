"""A package's ``command.yml``: name, description and capability tags
(docs/localagents.md "Capability tags").

Best-effort by contract: a missing, unreadable or malformed manifest leaves the agent
discoverable with its base tags (``local``, ``agent:<id>``) and never breaks discovery.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Manifest", "base_tags", "capability_tags", "parse_manifest", "read_package_manifest"]

log = logging.getLogger(__name__)

MANIFEST = "command.yml"
_MAX_BYTES = 256 * 1024


@dataclass(frozen=True)
class Manifest:
    """What ``command.yml`` declares; empty values when it declares nothing usable."""

    name: str = ""
    description: str = ""
    capabilities: tuple[str, ...] = ()


def base_tags(agent_id: str) -> tuple[str, str]:
    """The identity tags every local agent carries."""
    return ("local", f"agent:{agent_id}")


def capability_tags(agent_id: str, manifest: Manifest) -> list[str]:
    """Base tags, then the declared ones: order-preserving, deduplicated."""
    return list(dict.fromkeys([*base_tags(agent_id), *manifest.capabilities]))


def parse_manifest(text: str) -> Manifest:
    """Parse manifest text; anything malformed yields an empty :class:`Manifest`."""
    import yaml  # here: only indexing packages needs it (local agents are opt-in)

    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError:
        return Manifest()
    if not isinstance(data, dict):
        return Manifest()
    name = data.get("name")
    desc = data.get("description")
    caps = data.get("capabilities")
    tags: list[str] = []
    if isinstance(caps, list):
        tags = [c.strip() for c in caps if isinstance(c, str) and c.strip()]
    elif isinstance(caps, str) and caps.strip():
        tags = [c.strip() for c in caps.split(",") if c.strip()]
    return Manifest(
        name=name.strip() if isinstance(name, str) else "",
        description=desc.strip() if isinstance(desc, str) else "",
        capabilities=tuple(dict.fromkeys(tags)),
    )


def read_package_manifest(package: Path) -> Manifest:
    """Read ``<package>/command.yml``; missing or unreadable yields an empty Manifest."""
    try:
        with (package / MANIFEST).open("rb") as fh:
            raw = fh.read(_MAX_BYTES)
    except OSError:
        return Manifest()
    try:
        return parse_manifest(raw.decode("utf-8"))
    except UnicodeDecodeError:
        log.info("manifest %s is not UTF-8; using base tags", package / MANIFEST)
        return Manifest()
