"""A tiny real HTTP server with scripted replies, for what the simulator cannot produce
(400/403 answers, SSE comments, servers that quote the request's headers back)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


@dataclass
class Seen:
    headers: dict[str, str]
    body: bytes
    path: str = ""

    @property
    def chat(self) -> bool:
        """A chat request (not a side request such as a tokenizer's)."""
        return self.path.endswith("/chat/completions") or self.path == "/api/chat"


class Stub:
    """Answers each POST with the next scripted :class:`Reply` (the last one repeats).

    ``echo_headers`` makes a reply's body a template: ``{headers}`` becomes the request's
    headers (JSON-escaped) and ``{auth}`` its Authorization header, as a careless proxy's
    error page might show them.
    """

    def __init__(self, replies: list[Reply], *, echo_headers: bool = False) -> None:
        self.replies = list(replies)
        self.echo_headers = echo_headers
        self.seen: list[Seen] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                stub.seen.append(Seen(headers, body, self.path))
                reply = stub.replies[min(len(stub.seen), len(stub.replies)) - 1]
                data = reply.body
                if stub.echo_headers:
                    data = data.replace(b"{auth}", self.headers.get("Authorization", "").encode())
                    # Authorization first, so no truncation of the message can hide it.
                    items = sorted(self.headers.items(), key=lambda kv: kv[0] != "Authorization")
                    shown = "; ".join(f"{k}: {v}" for k, v in items)
                    data = data.replace(b"{headers}", json.dumps(shown)[1:-1].encode())
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))
        self._thread.daemon = True
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
