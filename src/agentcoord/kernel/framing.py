"""Newline-delimited JSON frames with a size limit (MCP stdio transport framing).

Pure: feed bytes, get complete lines or an "oversize" marker. An oversize line is skipped up to
its newline so one bad frame never desynchronises the stream.
"""

from __future__ import annotations

__all__ = ["OVERSIZE", "LineSplitter"]

OVERSIZE = object()  # stands in for a line that exceeded the limit


class LineSplitter:
    """Splits a byte stream into lines of at most ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buf = bytearray()
        self._skipping = False

    def feed(self, data: bytes) -> list[bytes | object]:
        out: list[bytes | object] = []
        self._buf += data
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                if not self._skipping and len(self._buf) > self._limit:
                    self._skipping = True
                    out.append(OVERSIZE)
                if self._skipping:
                    self._buf.clear()
                return out
            line = bytes(self._buf[:nl])
            del self._buf[: nl + 1]
            if self._skipping:
                self._skipping = False
                continue
            if len(line) > self._limit:
                out.append(OVERSIZE)
            elif line.strip():
                out.append(line)
