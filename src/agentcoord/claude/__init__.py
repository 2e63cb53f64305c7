"""Claude Code's side of agentcoord: its hooks, the channel push, the hook client, its settings
and the plugin."""
