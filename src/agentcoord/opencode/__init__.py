"""OpenCode: ``agentcoord setup opencode`` (docs/other-clis.md "OpenCode")."""
