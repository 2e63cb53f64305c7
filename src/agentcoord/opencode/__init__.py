"""OpenCode: ``agentcoord setup opencode`` (docs/opencode.md)."""
