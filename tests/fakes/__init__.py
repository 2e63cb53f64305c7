"""Stand-in programs for tests (a ``claude`` parent process, MCP client scripts)."""
