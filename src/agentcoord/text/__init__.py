"""Words shared by the CLI, the console and the tools (one wording for each event)."""
