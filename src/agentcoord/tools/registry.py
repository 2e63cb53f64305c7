"""The set of tools one daemon serves, in a stable order for ``tools/list`` paging."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from agentcoord.tools.base import Tool

__all__ = ["READ_ONLY_META", "ToolRegistry"]

# The initialize result's ``_meta`` key listing the read-only tools (MCP: ``_meta`` keys may
# carry a prefix of their own).
READ_ONLY_META = "agentcoord/readOnlyTools"


class ToolRegistry:
    """Tools by name; registering a name twice is a programming error."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        human_only: Mapping[str, str] = {},
    ) -> None:
        self._tools: dict[str, Tool] = {}
        # name -> the error an agent gets calling it (the tool's own words)
        self._human_only = dict(human_only)
        for tool in tools:
            self.add(tool)
        if unknown := self._human_only.keys() - self._tools.keys():
            raise ValueError(f"human-only tools that do not exist: {sorted(unknown)}")

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def all(self) -> list[Tool]:
        return list(self._tools.values())

    def read_only_names(self) -> list[str]:
        """The names of the tools that change nothing (:attr:`Tool.read_only`), in listing
        order."""
        return [t.name for t in self._tools.values() if t.read_only]

    def listed_for(self, kind: str) -> list[Tool]:
        """The tools ``tools/list`` shows a caller of ``kind``: the human's, and the unlisted
        (:attr:`Tool.listed`), only to the human."""
        if kind == "human":
            return self.all()
        return [t for t in self._tools.values() if t.listed and t.name not in self._human_only]

    def refusal(self, name: str, kind: str) -> str | None:
        """Why a caller of ``kind`` may not call ``name``, or None when it may."""
        if kind != "human" and name in self._human_only:
            return self._human_only[name]
        return None
