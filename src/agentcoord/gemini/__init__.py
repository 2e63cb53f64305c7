"""Gemini CLI: ``agentcoord setup gemini`` (docs/other-clis.md "Gemini CLI")."""
