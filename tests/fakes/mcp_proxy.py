"""Forward stdin lines to the daemon's unix socket and its replies to stdout.

Run under the stand-in ``claude`` so the daemon sees this process as a Claude session:
    claude -- python mcp_proxy.py SOCKET
"""

import socket
import sys
import threading


def main() -> int:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(sys.argv[1])

    def pump_out() -> None:
        with sock.makefile("rb") as reader:
            for line in reader:
                sys.stdout.buffer.write(line)
                sys.stdout.buffer.flush()

    threading.Thread(target=pump_out, daemon=True).start()
    for line in sys.stdin.buffer:
        sock.sendall(line)
    sock.shutdown(socket.SHUT_WR)
    return 0


if __name__ == "__main__":
    sys.exit(main())
