"""The ``agentcoord`` command: its subcommands, its views of the daemon and ``doctor``."""
