"""The simulator's HTTP server: Ollama's ``/v1/chat/completions`` on 127.0.0.1, with knobs.

A real HTTP/1.1 server (keep-alive, chunked SSE) so clients are tested over real sockets.
Each connection gets a thread; shared state (recorded requests, fault draws, statistics) sits
behind one lock, and nothing sleeps unless a knob (latency, stall) asks for it.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import http
import json
import random
import socket
import socketserver
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from deepseek_review.options import default
from deepseek_review.simulator import wire
from deepseek_review.simulator.answer import Plan, plan_completion, prompt_token_estimate
from deepseek_review.simulator.config import (
    RecordedRequest,
    Reject,
    SimulatorConfig,
    validate_chat,
)
from deepseek_review.simulator.wire import ALL_FAULTS

CHAT_PATH = "/v1/chat/completions"
DEFAULT_MODEL: str = default("model")  # the model the tool asks for by default
_CHUNK = 1024 * 1024


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], sim: Simulator) -> None:
        self.sim = sim
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup (slow on some machines)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Dropped connections are normal here (faults, stop()); anything else is a bug."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class Simulator:
    """A fake Ollama endpoint for tests, the demo and benchmarks; see the package docstring."""

    def __init__(self, config: SimulatorConfig | None = None, **overrides: Any) -> None:
        self.config = config if config is not None else SimulatorConfig()
        if overrides:
            self.config = dataclasses.replace(self.config, **overrides)
        self.requests: list[RecordedRequest] = []
        #: Keep request bodies in :attr:`requests`; the long-running CLI turns this off.
        self.record_requests = True
        #: Called with one line per request (the CLI logs to stderr); None: silent.
        self.log: Callable[[str], None] | None = None
        self._lock = threading.Lock()
        self._script: collections.deque[str | None] = collections.deque()
        self._rng = random.Random(self.config.fault_seed)
        self._rng_seed = self.config.fault_seed
        self._chat_count = 0
        self._fault_counts: collections.Counter[str] = collections.Counter()
        self._slots: tuple[int, threading.Semaphore | None] = (0, None)
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Simulator:
        """Bind and serve in a daemon thread; returns self so ``Simulator().start()`` chains."""
        if self._server is not None:
            raise RuntimeError("simulator already started")
        self._stopping.clear()
        self._server = _Server((self.config.host, self.config.port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="simulator", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop promptly: wake stalled and queued requests and cut open connections."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (after start)."""
        if self._server is None:
            raise RuntimeError("simulator not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    @property
    def chat_url(self) -> str:
        return self.base_url + CHAT_PATH

    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded ``POST /v1/chat/completions`` requests, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and _route(r.path) == CHAT_PATH]

    def script_faults(self, kinds: list[str | None]) -> None:
        """Queue faults for the next valid chat requests, ahead of any random draw."""
        unknown = [k for k in kinds if k is not None and k not in ALL_FAULTS]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}")
        with self._lock:
            self._script.extend(kinds)

    def reset(self) -> None:
        """Forget recorded requests, scripted faults and statistics; re-seed fault draws."""
        with self._lock:
            self.requests.clear()
            self._script.clear()
            self._chat_count = 0
            self._fault_counts.clear()
            self._rng = random.Random(self.config.fault_seed)
            self._rng_seed = self.config.fault_seed

    def stats(self) -> dict[str, Any]:
        """What ``GET /_sim/stats`` reports."""
        with self._lock:
            return {"chat_requests": self._chat_count, "faults": dict(self._fault_counts)}

    # -- internals used by the handler -------------------------------------------------

    def _admit(
        self, method: str, path: str, headers: dict[str, str], body: bytes, status: int, chat: bool
    ) -> tuple[str | None, int, int]:
        """Record a request; for a chat request that will be answered, draw its fault.

        Returns (fault, status, chat sequence number). Drawing and recording share one lock
        hold, so faults follow arrival order and the record is there before any reply byte.
        """
        cfg = self.config
        with self._lock:
            fault: str | None = None
            if chat:
                self._chat_count += 1
            if chat and status == 200:
                fault = self._draw_locked(cfg)
                if fault is not None:
                    self._fault_counts[fault] += 1
                    status = wire.FAULT_STATUS.get(fault, 200)
            if fault == "cut-stream" and _wants_stream(body):
                status = 0
            kept = body if self.record_requests else b""
            self.requests.append(RecordedRequest(method, path, headers, kept, fault, status))
            return fault, status, self._chat_count

    def _draw_locked(self, cfg: SimulatorConfig) -> str | None:
        if self._script:
            return self._script.popleft()
        if cfg.fault_rate <= 0 or not cfg.fault_kinds:
            return None
        if cfg.fault_seed != self._rng_seed:
            self._rng, self._rng_seed = random.Random(cfg.fault_seed), cfg.fault_seed
        if self._rng.random() < cfg.fault_rate:
            return self._rng.choice(cfg.fault_kinds)
        return None

    def _slot(self) -> threading.Semaphore | None:
        capacity = self.config.capacity
        with self._lock:
            if self._slots[0] != capacity:
                self._slots = (capacity, threading.Semaphore(capacity) if capacity else None)
            return self._slots[1]

    def _acquire(self, slot: threading.Semaphore) -> bool:
        """Queue for a generation slot; give up only when the simulator stops."""
        while not slot.acquire(timeout=0.05):
            if self._stopping.is_set():
                return False
        return True

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless stopping; False means stop() interrupted it."""
        return seconds <= 0 or not self._stopping.wait(seconds)


def _overflow(cfg: SimulatorConfig, req: dict[str, Any]) -> dict[str, Any] | None:
    """llama.cpp's error for a prompt over the context, when the config refuses one."""
    if cfg.context_window is None or cfg.context_overflow == "clip":
        return None
    tokens = prompt_token_estimate(req["messages"])
    return wire.context_error(tokens, cfg.context_window) if tokens > cfg.context_window else None


def _route(path: str) -> str:
    return path.split("?", 1)[0]


def _wants_stream(body: bytes) -> bool:
    try:
        return json.loads(body).get("stream") is True
    except (ValueError, AttributeError, UnicodeDecodeError):
        return False


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.sim._lock:
            self.server.sim._connections.add(self.connection)

    def finish(self) -> None:
        with self.server.sim._lock:
            self.server.sim._connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Request logging goes through :attr:`Simulator.log` instead."""

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

    # -- writing ------------------------------------------------------------------------

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
            got = self.rfile.read(min(length, _CHUNK))
            if not got:
                return
            length -= len(got)

    # -- dispatch -----------------------------------------------------------------------

    def _dispatch(self) -> None:
        sim = self.server.sim
        started = time.perf_counter()
        fault, status = None, 0
        try:
            fault, status = self._serve(sim)
        except OSError:
            self.close_connection = True
        finally:
            if sim.log is not None:
                ms = (time.perf_counter() - started) * 1000
                sim.log(f"{self.command} {self.path} {status} fault={fault} {ms:.1f}ms")

    def _serve(self, sim: Simulator) -> tuple[str | None, int]:
        cfg = sim.config
        headers = {name.lower(): value for name, value in self.headers.items()}
        route = _route(self.path)
        chat = self.command == "POST" and route == CHAT_PATH
        body, req, reject = b"", None, None
        try:
            body = self._read_body(cfg.max_body_bytes)
            if (
                cfg.api_key is not None
                and not route.startswith("/_sim/")
                and headers.get("authorization") != f"Bearer {cfg.api_key}"
            ):
                raise Reject(401, {"error": "unauthorized"})
            if chat:
                req = validate_chat(body)
                if cfg.models is not None and req["model"] not in cfg.models:
                    message = f'model "{req["model"]}" not found, try pulling it first'
                    raise Reject(404, wire.error_body(404, message))
                overflow = _overflow(cfg, req)
                if overflow and (cfg.context_overflow == "refuse" or req.get("stream") is not True):
                    raise Reject(400, {"error": overflow})
        except Reject as exc:
            reject = exc
        except ValueError:
            self.close_connection = True
            reject = Reject(400, wire.error_body(400, "malformed request body framing"))
        status = reject.status if reject else 200
        fault, status, seq = sim._admit(self.command, self.path, headers, body, status, chat)
        if reject is not None:
            self._send_json(reject.status, reject.body, reject.headers)
        elif req is not None:
            self._chat(sim, cfg, req, fault, seq)
        else:
            self._other(sim, cfg, route)
        return fault, status

    def _other(self, sim: Simulator, cfg: SimulatorConfig, route: str) -> None:
        if self.command == "GET" and route == "/v1/models":
            names = sorted(cfg.models) if cfg.models is not None else [DEFAULT_MODEL]
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "library"} for m in names
            ]
            self._send_json(200, {"object": "list", "data": data})
        elif self.command == "GET" and route == "/api/version":
            self._send_json(200, {"version": "0.33.0-sim"})
        elif self.command == "GET" and route == "/_sim/stats":
            self._send_json(200, sim.stats())
        else:
            message = f"404 page not found: {self.command} {route}"
            self._send_json(404, wire.error_body(404, message))

    def _chat(
        self,
        sim: Simulator,
        cfg: SimulatorConfig,
        req: dict[str, Any],
        fault: str | None,
        seq: int,
    ) -> None:
        if fault == "reset":
            return self._reset()
        if fault in ("500", "502", "503"):
            status = int(fault)
            return self._send_json(status, wire.error_body(status, wire.FAULT_MESSAGES[status]))
        if fault == "429":
            extra = [("Retry-After", f"{cfg.retry_after:g}")]
            return self._send_json(429, {"error": "rate limit exceeded"}, extra)
        if fault == "429-string":
            return self._send_json(429, {"error": wire.RATE_LIMIT_STRING})
        if fault == "html":
            return self._send(502, wire.HTML_502, "text/html")
        if fault == "empty":
            return self._send(200, b"")
        if fault == "stall":
            if not sim._sleep(cfg.stall_seconds):
                return self._reset()
            fault = None
        overflow = _overflow(cfg, req)
        if overflow:  # streaming (a 400 otherwise): refused in the stream, as the server would
            events = wire.overflow_events(cfg.context_overflow, overflow)
            return self._stream(sim, 0.0, events, complete=True)
        plan = plan_completion(
            req["messages"],
            max_tokens=req.get("max_tokens"),
            answer_words=cfg.answer_words,
            reasoning_words=cfg.reasoning_words,
            echo_prefill=cfg.echo_prefill,
            context_window=cfg.context_window,
            end_token=cfg.end_token,
            directive_restarts=cfg.directive_restarts,
        )
        slot = sim._slot()
        if slot is not None and not sim._acquire(slot):
            return self._reset()
        try:
            self._generate(sim, cfg, req, plan, fault, f"chatcmpl-{seq % 999}")
        finally:
            if slot is not None:
                slot.release()

    def _generate(
        self,
        sim: Simulator,
        cfg: SimulatorConfig,
        req: dict[str, Any],
        plan: Plan,
        fault: str | None,
        ident: str,
    ) -> None:
        model = req["model"]
        stream = req.get("stream") is True and fault != "huge"
        if not stream:
            if not sim._sleep(cfg.latency):
                return self._reset()
            with_usage = not cfg.omit_usage
            body = wire.completion(
                plan, model=model, ident=ident, with_usage=with_usage, fault=fault
            )
            data = wire.dumps(body) + b"\n"
            if fault in ("malformed", "cut-stream"):
                return self._send(200, data[: len(data) // 2])
            if fault == "huge":
                return self._send_huge(data)
            return self._send(200, data)
        options = req.get("stream_options")
        include_usage = (
            isinstance(options, dict) and options.get("include_usage") is True
        ) and not cfg.omit_usage
        chunks = wire.stream_chunks(
            plan,
            model=model,
            ident=ident,
            legacy=cfg.legacy_stream,
            llama=cfg.llama_stream,
            include_usage=include_usage,
        )
        if fault is not None:
            for chunk in chunks:
                wire.mutate(chunk, fault)
        events = [wire.sse(chunk) for chunk in chunks] + [wire.SSE_DONE]
        if fault == "malformed":
            events = [wire.SSE_GARBAGE]
            self.close_connection = True
        elif fault == "cut-stream":
            unfinished = [
                c for c in chunks if c["choices"] and not c["choices"][0]["finish_reason"]
            ]
            events = events[: len(unfinished) // 2]
            self.close_connection = True
        self._stream(sim, cfg.latency, events, complete=fault != "cut-stream")

    def _stream(self, sim: Simulator, latency: float, events: list[bytes], complete: bool) -> None:
        """Write SSE events as HTTP chunks; ``complete=False`` cuts before the last chunk."""
        headers = [
            ("Content-Type", "text/event-stream"),
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
            if not sim._sleep(pause):
                return self._reset()
            self.wfile.write(frame)

    def _send_huge(self, data: bytes) -> None:
        """A valid but ~80 MB JSON body (whitespace padding), written piece by piece."""
        size = wire.HUGE_PADDING_BYTES + len(data)
        headers = [("Content-Type", "application/json"), ("Content-Length", str(size))]
        self.wfile.write(self._head(200, headers) + data[:1])
        pad = b" " * _CHUNK
        for _ in range(wire.HUGE_PADDING_BYTES // _CHUNK):
            self.wfile.write(pad)
        self.wfile.write(data[1:])
