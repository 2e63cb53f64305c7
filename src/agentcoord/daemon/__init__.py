"""The daemon: lifecycle, NATS supervisor, listeners, the MCP core and caller identity."""
