"""Claude Code's native cross-session inbox: the session registry, the frames, delivery into
live sessions and the daemon's own peer socket (docs/claude-code.md "The native inbox")."""

from agentcoord.claude.inbox.delivery import NativeInboxes, SessionLister
from agentcoord.claude.inbox.registry import Peer, read_peer
from agentcoord.claude.inbox.router import ROUTER_NAME, PeerSocket

__all__ = ["ROUTER_NAME", "NativeInboxes", "Peer", "PeerSocket", "SessionLister", "read_peer"]
