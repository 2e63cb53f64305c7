"""Gemini CLI: ``agentcoord setup gemini`` (docs/gemini.md)."""
