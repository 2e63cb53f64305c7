"""The shared kernel: what every part of the daemon speaks, below all of them.

Who calls (:mod:`.caller`), the session agents' directory (:mod:`.directory`) and how a
session agent is named (:mod:`.sessionnames`), line framing and JSON-RPC (:mod:`.framing`,
:mod:`.jsonrpc`), the loopback HTTP server (:mod:`.httpserver`), systemd activation
(:mod:`.activation`), the NATS settings (:mod:`.natsremote`, :mod:`.natsbin`), the private
atomic write (:mod:`.files`) and background tasks owned by a task group (:mod:`.tasks`).
Nothing here imports another part of agentcoord
except :mod:`agentcoord.errors` and :mod:`agentcoord.kernel.config` (docs/architecture.md).
"""
