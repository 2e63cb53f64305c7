"""Who a caller is, from the transport alone: the process probe, the ancestry walk, the runners
the daemon started, the session kinds (one per agent CLI) and the human's proof
(docs/architecture.md "Session kinds")."""
