"""A hostile HTTP server on 127.0.0.1 that writes raw bytes as slowly or endlessly as it
likes, for the transport and server-hint tests."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any


class Hostile:
    """Reads each request (one per connection), records its headers, then lets ``act`` write
    the answer: raw bytes, as slowly or as endlessly as it likes, until the client leaves."""

    def __init__(self, act: Act) -> None:
        self.act = act
        self.seen: list[dict[str, str]] = []
        self.sent = 0
        self.stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self._workers: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            worker = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            self._workers.append(worker)
            worker.start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            try:
                head = b""
                while b"\r\n\r\n" not in head:
                    got = conn.recv(65536)
                    if not got:
                        return
                    head += got
                top, _, body = head.partition(b"\r\n\r\n")
                headers = {}
                for line in top.decode("latin-1").split("\r\n")[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                while len(body) < length:
                    got = conn.recv(65536)
                    if not got:
                        return
                    body += got
                if top.startswith(b"GET /api/"):  # not Ollama: its pre-flight probe gets a 404
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    return
                self.seen.append(headers)
                self.act(Wire(conn, self), self.stopping)
            except OSError:  # the client went away: that is how most attacks end
                return

    def stop(self) -> None:
        self.stopping.set()
        self._listener.close()
        self._thread.join(5)
        for worker in self._workers:
            worker.join(5)


class Wire:
    """The connection, counting what is sent (to show how little a bomb costs)."""

    def __init__(self, conn: socket.socket, server: Hostile) -> None:
        self._conn, self._server = conn, server

    def sendall(self, data: bytes) -> None:
        self._conn.sendall(data)
        self._server.sent += len(data)


def head(ctype: str, *extra: str) -> bytes:
    """Response headers with no length: the body runs until the server closes."""
    lines = ["HTTP/1.1 200 OK", f"Content-Type: {ctype}", "Connection: close", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def answer(content: str = "Fine.", **extra: Any) -> bytes:
    obj = {
        "model": "m",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        **extra,
    }
    return json.dumps(obj).encode()


def drip(data: bytes, every: float = 0.05) -> Act:
    """``data`` one byte at a time, each well within the read timeout, then again forever."""

    def act(conn: Wire, stop: threading.Event) -> None:
        while not stop.is_set():
            for i in range(len(data)):
                if stop.wait(every):
                    return
                conn.sendall(data[i : i + 1])

    return act


Act = Callable[["Wire", threading.Event], None]
