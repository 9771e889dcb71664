"""The simulator's API and shared state: Ollama on 127.0.0.1, with knobs.

A real HTTP/1.1 server (:mod:`.handler`: keep-alive, chunked SSE) so clients are tested over
real sockets. Each connection gets a thread; shared state (recorded requests, fault draws,
statistics, loaded models) sits behind one lock, and nothing sleeps unless a knob (latency,
stall) asks for it.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import random
import socket
import threading
from collections.abc import Callable
from typing import Any

from deepseek_review.testing.simulator import wire
from deepseek_review.testing.simulator.config import (
    CHAT_PATH,
    RecordedRequest,
    Reject,
    SimulatorConfig,
    route_of,
    wants_stream,
)
from deepseek_review.testing.simulator.handler import DEFAULT_MODEL, Server
from deepseek_review.testing.simulator.native import NATIVE_CHAT_PATH
from deepseek_review.testing.simulator.prefix_cache import PrefixCache
from deepseek_review.testing.simulator.wire import ALL_FAULTS

__all__ = ["CHAT_PATH", "DEFAULT_MODEL", "Simulator"]
_CHATS = (CHAT_PATH, NATIVE_CHAT_PATH)


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
        self._waiting = 0
        self._port: int | None = None
        self._loaded: dict[str, int] = {}
        self.prefix_cache = PrefixCache()
        """The prompts it has seen, for ``prompt_cache``."""
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Simulator:
        """Bind and serve in a daemon thread; returns self so ``Simulator().start()`` chains."""
        if self._server is not None:
            raise RuntimeError("simulator already started")
        self._stopping.clear()
        self._server = Server((self.config.host, self.config.port), self)
        self._port = int(self._server.server_address[1])
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
        """The bound port (after start; after :attr:`SimulatorConfig.die_after` killed it too,
        so a test can still name the dead server)."""
        if self._server is not None:
            self._port = int(self._server.server_address[1])
        if self._port is None:
            raise RuntimeError("simulator not started")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    @property
    def chat_url(self) -> str:
        return self.base_url + CHAT_PATH

    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded chat requests (``/v1/chat/completions`` and ``/api/chat``), in order."""
        with self._lock:
            return [r for r in self.requests if r.method == "POST" and route_of(r.path) in _CHATS]

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
            self._loaded.clear()
            self.prefix_cache.clear()
            self._script.clear()
            self._chat_count = 0
            self._fault_counts.clear()
            self._rng = random.Random(self.config.fault_seed)
            self._rng_seed = self.config.fault_seed

    def stats(self) -> dict[str, Any]:
        """What ``GET /_sim/stats`` reports."""
        with self._lock:
            return {"chat_requests": self._chat_count, "faults": dict(self._fault_counts)}

    def default_context(self) -> int:
        """The context a model runs with when the request does not set ``num_ctx``."""
        cfg = self.config
        return cfg.context_window or cfg.model_context_length

    def loaded(self) -> dict[str, int]:
        """What ``/api/ps`` lists: each loaded model and its runtime context."""
        with self._lock:
            if self.config.preloaded:
                names = sorted(self.config.models or {DEFAULT_MODEL})
                return {name: self.default_context() for name in names} | self._loaded
            return dict(self._loaded)

    def load(self, model: str, context: int) -> bool:
        """A chat request runs ``model`` with ``context``; True when it was loaded so already."""
        with self._lock:
            before = self._loaded.get(model)
            if before is None and self.config.preloaded:
                before = self.default_context()
            self._loaded[model] = context
            return before == context

    # -- what the handler calls (:class:`.handler.State`) ----------------------------------

    def track(self, conn: socket.socket, open_: bool) -> None:
        """Keep (or drop) a client connection, so that :meth:`stop` can close it."""
        with self._lock:
            if open_:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def admit(
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
            if chat and cfg.die_after is not None and self._chat_count > cfg.die_after:
                fault, status = "reset", 0  # this connection is cut, and the server dies
                threading.Thread(target=self.stop, name="simulator-dies", daemon=True).start()
            elif chat and status == 200:
                fault = self._draw_locked(cfg)
                if fault is not None:
                    self._fault_counts[fault] += 1
                    status = wire.FAULT_STATUS.get(fault, 200)
            if fault == "cut-stream" and wants_stream(body):
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

    def slot(self) -> threading.Semaphore | None:
        capacity = self.config.capacity
        with self._lock:
            if self._slots[0] != capacity:
                self._slots = (capacity, threading.Semaphore(capacity) if capacity else None)
            return self._slots[1]

    def acquire(self, slot: threading.Semaphore) -> bool:
        """Queue for a generation slot; give up only when the simulator stops. Beyond
        ``max_queue`` waiting, :class:`.config.Reject` with Ollama's 503."""
        if slot.acquire(blocking=False):
            return True
        with self._lock:
            if self.config.max_queue is not None and self._waiting >= self.config.max_queue:
                raise Reject(503, wire.error_body(503, wire.QUEUE_FULL))
            self._waiting += 1
        try:
            while not slot.acquire(timeout=0.05):
                if self._stopping.is_set():
                    return False
            return True
        finally:
            with self._lock:
                self._waiting -= 1

    def sleep(self, seconds: float) -> bool:
        """Sleep unless stopping; False means stop() interrupted it."""
        return seconds <= 0 or not self._stopping.wait(seconds)
