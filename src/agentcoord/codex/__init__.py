"""Codex CLI: ``agentcoord setup codex`` (docs/codex.md)."""
