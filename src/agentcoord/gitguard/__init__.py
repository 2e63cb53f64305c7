"""git's side of agentcoord: the pre-commit hook program and the daemon's answer to it."""
