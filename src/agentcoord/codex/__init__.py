"""Codex CLI: ``agentcoord setup codex`` (docs/other-clis.md "Codex")."""
