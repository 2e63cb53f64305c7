"""The composition root (docs/architecture.md "Services"): builds every service once
(:mod:`.compose`) into one frozen set (:mod:`.services`), runs it (:mod:`.run`), and holds the
tool registry (:mod:`.toolset`), the start-up phases, the state dir's locks and format, the
daemon's status, the runtime dir, nats-server and the link to it. The listeners and the MCP core
are adapters (:mod:`agentcoord.mcp`); who a caller is, a service (:mod:`agentcoord.identity`)."""
