"""The one lookup of a loopback TCP peer's process (identity/procprobe.py), on real sockets."""

from __future__ import annotations

import os
import socket
import subprocess

from agentcoord.identity.procprobe import (
    holds_socket,
    peer_among,
    process_started,
    tcp_peer_pid,
    tcp_socket,
)


def test_a_known_peer_is_the_process_holding_the_connections_socket() -> None:
    """A new connection's peer is found among known processes by the socket it holds (not the
    daemon's end), and only while it is the same process (its start time) of the same uid."""
    started = process_started(os.getpid())
    assert started is not None
    me = (os.getpid(), started, os.getuid())
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        with socket.create_connection(srv.getsockname()) as client:
            accepted, _ = srv.accept()
            with accepted:
                peer, local = client.getsockname(), srv.getsockname()
                found = tcp_socket(peer, local)
                assert found == (os.fstat(client.fileno()).st_ino, os.getuid())
                assert holds_socket(os.getpid(), found[0])
                assert peer_among(peer, local, [me]) == os.getpid()
                assert peer_among(peer, local, [(os.getpid(), started + 1, os.getuid())]) is None
                assert peer_among(peer, local, [(os.getpid(), started, os.getuid() + 1)]) is None
                assert tcp_peer_pid(peer, local) == (os.getpid(), os.getuid())
                other = subprocess.Popen(["sleep", "30"])
                try:
                    other_started = process_started(other.pid)
                    assert other_started is not None
                    assert not holds_socket(other.pid, found[0])
                    known = [(other.pid, other_started, os.getuid())]
                    assert peer_among(peer, local, known) is None
                    assert peer_among(peer, local, [*known, me]) == os.getpid()
                finally:
                    other.kill()
                    other.wait()
        assert tcp_socket(peer, local) is None  # closed: no such socket
        assert peer_among(peer, local, [me]) is None
