"""Clients of the daemon that run in other processes: the stdio relay (the shim), the start on
demand and the CLI's socket calls. None of them imports the daemon."""
