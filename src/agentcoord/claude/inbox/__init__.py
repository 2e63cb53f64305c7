"""Claude Code's native cross-session inbox: the session registry, the frames, delivery into
live sessions and the daemon's own peer socket (docs/claude-code.md "The native inbox")."""

from agentcoord.claude.inbox.delivery import NativeInboxes, Published, Route, SessionLister
from agentcoord.claude.inbox.mailboxes import ROUTER_NAME, Mailboxes, channel_box, channel_of
from agentcoord.claude.inbox.sessionfiles import Peer, read_peer

__all__ = [
    "ROUTER_NAME",
    "Mailboxes",
    "NativeInboxes",
    "Peer",
    "Published",
    "Route",
    "SessionLister",
    "channel_box",
    "channel_of",
    "read_peer",
]
