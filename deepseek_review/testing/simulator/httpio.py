"""The simulator's byte-level HTTP: status lines, bodies, chunked streams, resets, request bodies.

Kept apart from what the simulator answers (:mod:`.handler`) so routes only choose bytes.
"""

from __future__ import annotations

import http
import socket
import struct
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler

from deepseek_review.testing.simulator import wire
from deepseek_review.testing.simulator.config import Reject

CHUNK = 1024 * 1024


class Writer(BaseHTTPRequestHandler):
    """HTTP/1.1 primitives every simulator route writes with."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def _head(self, status: int, headers: Iterable[tuple[str, str]]) -> bytes:
        phrase = http.HTTPStatus(status).phrase
        lines = [f"HTTP/1.1 {status} {phrase}", "Server: deepseek-review-simulator"]
        lines += [f"{name}: {value}" for name, value in headers]
        if self.close_connection:
            lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _send(
        self,
        status: int,
        body: bytes,
        ctype: str = "application/json",
        extra: Iterable[tuple[str, str]] = (),
    ) -> None:
        headers = [("Content-Type", ctype), ("Content-Length", str(len(body))), *extra]
        self.wfile.write(self._head(status, headers) + body)

    def _send_json(self, status: int, obj: object, extra: Iterable[tuple[str, str]] = ()) -> None:
        self._send(status, wire.dumps(obj) + b"\n", extra=extra)

    def _reset(self) -> None:
        """Abort the connection with an RST (SO_LINGER on, zero timeout)."""
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    # -- reading ------------------------------------------------------------------------

    def _read_body(self, limit: int) -> bytes:
        """The request body (Content-Length or chunked); raises Reject(413) past ``limit``."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            total = 0
            while True:
                size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                total += size
                if total > limit:
                    self.close_connection = True
                    raise Reject(413, wire.error_body(413, "request body too large"))
                parts.append(self.rfile.read(size))
                self.rfile.readline(1024)
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0:
            raise ValueError("negative Content-Length")
        if length > limit:
            self._drain(length)
            raise Reject(413, wire.error_body(413, "request body too large"))
        return self.rfile.read(length)

    def _drain(self, length: int) -> None:
        """Swallow an oversized body so the client sees our 413 rather than a reset."""
        self.close_connection = True
        while length > 0 and length <= 1 << 30:
            got = self.rfile.read(min(length, CHUNK))
            if not got:
                return
            length -= len(got)

    # -- dispatch -----------------------------------------------------------------------

    def _stream(
        self,
        sleep: Callable[[float], bool],
        latency: float,
        events: list[bytes],
        complete: bool,
        ctype: str = "text/event-stream",
    ) -> None:
        """Write events as HTTP chunks; ``complete=False`` cuts before the last chunk;
        ``sleep`` False (the simulator stops) resets the connection."""
        headers = [
            ("Content-Type", ctype),
            ("Cache-Control", "no-cache"),
            ("Transfer-Encoding", "chunked"),
        ]
        frames = [b"%x\r\n%s\r\n" % (len(event), event) for event in events]
        if complete:
            frames.append(b"0\r\n\r\n")
        if latency <= 0:
            self.wfile.write(self._head(200, headers) + b"".join(frames))
            return
        self.wfile.write(self._head(200, headers))
        pause = latency / max(1, len(events))
        for frame in frames:
            if not sleep(pause):
                return self._reset()
            self.wfile.write(frame)

    def _send_whole(self, body: object, fault: str | None) -> None:
        """A whole JSON answer, or what ``fault`` makes of it: cut in half (``malformed``,
        ``cut-stream``) or padded past any sane size (``huge``)."""
        data = wire.dumps(body) + b"\n"
        if fault in ("malformed", "cut-stream"):
            return self._send(200, data[: len(data) // 2])
        if fault == "huge":
            return self._send_huge(data)
        return self._send(200, data)

    def _send_huge(self, data: bytes) -> None:
        """A valid but ~80 MB JSON body (whitespace padding), written piece by piece."""
        size = wire.HUGE_PADDING_BYTES + len(data)
        headers = [("Content-Type", "application/json"), ("Content-Length", str(size))]
        self.wfile.write(self._head(200, headers) + data[:1])
        pad = b" " * CHUNK
        for _ in range(wire.HUGE_PADDING_BYTES // CHUNK):
            self.wfile.write(pad)
        self.wfile.write(data[1:])
