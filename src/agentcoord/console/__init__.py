"""The web console: a static page plus JSON and SSE endpoints on the daemon's HTTP port."""

from __future__ import annotations

from agentcoord.console.routes import ConsoleRoutes

__all__ = ["ConsoleRoutes"]
