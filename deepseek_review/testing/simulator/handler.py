"""The simulator's request handler: route, validate, record, then answer or fail on purpose.

One thread per connection (:class:`Server`); the shared state is the :class:`State`.
"""

from __future__ import annotations

import dataclasses
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any, Protocol

from deepseek_review.options.table import default
from deepseek_review.testing.simulator import native, structured, tokenizer, wire
from deepseek_review.testing.simulator.answer import Plan, plan_completion, prompt_token_estimate
from deepseek_review.testing.simulator.config import (
    CHAT_PATH,
    Reject,
    SimulatorConfig,
    route_of,
    validate_chat,
)
from deepseek_review.testing.simulator.httpio import Writer
from deepseek_review.testing.simulator.prefix_cache import PrefixCache

#: Faults answered without generating anything (:meth:`Handler._refuse`).
_REFUSALS = frozenset({"reset", "500", "502", "503", "429", "429-string", "html", "empty"})
#: What each server kind answers on the route that tells it apart (``server_kind``).
_IDENTIFYING: dict[tuple[str, str], object] = {
    ("/api/version", "ollama"): {"version": "0.33.0-sim"},
    ("/props", "llama.cpp"): {
        "default_generation_settings": {"n_ctx": 4096},
        "total_slots": 1,
        "build_info": "b0000-sim",
    },
    ("/version", "vllm"): {"version": "0.11.0-sim"},
}


class State(Protocol):
    """What a connection's thread asks of the shared simulator
    (:class:`deepseek_review.testing.simulator.server.Simulator`)."""

    config: SimulatorConfig
    log: Callable[[str], None] | None
    prefix_cache: PrefixCache

    def track(self, conn: socket.socket, open_: bool) -> None: ...

    def admit(
        self, method: str, path: str, headers: dict[str, str], body: bytes, status: int, chat: bool
    ) -> tuple[str | None, int, int]: ...

    def slot(self) -> threading.Semaphore | None: ...

    def acquire(self, slot: threading.Semaphore) -> bool: ...

    def sleep(self, seconds: float) -> bool: ...

    def loaded(self) -> dict[str, int]: ...

    def stats(self) -> dict[str, Any]: ...

    def load(self, model: str, context: int) -> bool: ...

    def default_context(self) -> int: ...


DEFAULT_MODEL: str = default("model")  # the model the tool asks for by default


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], sim: State) -> None:
        self.sim = sim
        super().__init__(address, Handler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup (slow on some machines)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Dropped connections are normal here (faults, stop()); anything else is a bug."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def _native_context(sim: State, options: dict[str, Any]) -> int:
    """The context a native request runs with: its ``num_ctx``, else the server's default;
    never over what the model was trained for."""
    return min(options.get("num_ctx") or sim.default_context(), sim.config.model_context_length)


def _overflow(cfg: SimulatorConfig, req: dict[str, Any]) -> dict[str, Any] | None:
    """llama.cpp's error for a prompt over the context, when the config refuses one."""
    if cfg.context_window is None or cfg.context_overflow == "clip":
        return None
    tokens = prompt_token_estimate(req["messages"])
    return wire.context_error(tokens, cfg.context_window) if tokens > cfg.context_window else None


def _check_effort(cfg: SimulatorConfig, req: dict[str, Any]) -> None:
    """Ollama's 400s for ``reasoning_effort``: a value it does not know, or thinking asked
    of a model that has none."""
    effort = req.get("reasoning_effort")
    if effort is None or effort == "":
        return
    if effort not in wire.REASONING_EFFORTS:
        raise Reject(400, wire.error_body(400, f"invalid reasoning value: {effort!r}"))
    if effort != "none" and "thinking" not in native.capabilities(cfg):
        message = f'"{req["model"]}" does not support thinking'
        raise Reject(400, wire.error_body(400, message))


class Handler(Writer):
    server: Server

    def setup(self) -> None:
        super().setup()
        self.server.sim.track(self.connection, True)

    def finish(self) -> None:
        self.server.sim.track(self.connection, False)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Request logging goes through :attr:`Simulator.log` instead."""

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_GET

    # -- writing ------------------------------------------------------------------------

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

    def _serve(self, sim: State) -> tuple[str | None, int]:
        cfg = sim.config
        headers = {name.lower(): value for name, value in self.headers.items()}
        route = route_of(self.path)
        native_chat = self.command == "POST" and route == native.NATIVE_CHAT_PATH
        chat = (self.command == "POST" and route == CHAT_PATH) or native_chat
        body, req, reject = b"", None, None
        try:
            body = self._read_body(cfg.max_body_bytes)
            if (
                cfg.api_key is not None
                and not route.startswith("/_sim/")
                and headers.get("authorization") != f"Bearer {cfg.api_key}"
            ):
                raise Reject(401, {"error": "unauthorized"})
            if native_chat:
                req = native.parse(body)
                options = native.validate_chat(cfg, req)
                native.refuse_overflow(
                    req, prompt_token_estimate(req["messages"]), _native_context(sim, options)
                )
            elif chat:
                req = validate_chat(body)
                _check_effort(cfg, req)
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
        fault, status, seq = sim.admit(self.command, self.path, headers, body, status, chat)
        if reject is not None:
            self._send_json(reject.status, reject.body, reject.headers)
        elif req is not None:
            self._chat(sim, cfg, req, fault, seq, native_chat)
        else:
            self._other(sim, cfg, route, body)
        return fault, status

    def _other(self, sim: State, cfg: SimulatorConfig, route: str, body: bytes) -> None:
        if self.command == "GET" and route == "/v1/models":
            names = sorted(cfg.models) if cfg.models is not None else [DEFAULT_MODEL]
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "library"} for m in names
            ]
            self._send_json(200, {"object": "list", "data": data})
        elif self.command == "GET" and (route, cfg.server_kind) in _IDENTIFYING:
            self._send_json(200, _IDENTIFYING[route, cfg.server_kind])
        elif self.command == "POST" and route == native.SHOW_PATH:
            try:
                model = native.check_model(cfg, native.parse(body).get("model"))
            except Reject as exc:
                return self._send_json(exc.status, exc.body)
            self._send_json(200, native.show(cfg, model))
        elif self.command == "GET" and route == native.PS_PATH:
            self._send_json(200, native.ps(sim.loaded()))
        elif tokenizer.serves(cfg, self.command, route):
            try:
                self._send_json(200, tokenizer.answer(cfg, route, body))
            except Reject as exc:
                self._send_json(exc.status, exc.body)
        elif self.command == "GET" and route == "/_sim/stats":
            self._send_json(200, sim.stats())
        else:
            message = f"404 page not found: {self.command} {route}"
            self._send_json(404, wire.error_body(404, message))

    def _refuse(self, fault: str, cfg: SimulatorConfig) -> None:
        """A fault that answers (or drops the connection) instead of generating."""
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
        return self._send(200, b"")  # "empty"

    def _chat(
        self,
        sim: State,
        cfg: SimulatorConfig,
        req: dict[str, Any],
        fault: str | None,
        seq: int,
        native_chat: bool = False,
    ) -> None:
        if fault in _REFUSALS:
            return self._refuse(fault, cfg)
        if fault == "stall":
            if not sim.sleep(cfg.stall_seconds):
                return self._reset()
            fault = None
        overflow = None if native_chat else _overflow(cfg, req)
        if overflow:  # streaming (a 400 otherwise): refused in the stream, as the server would
            events = wire.overflow_events(cfg.context_overflow, overflow)
            return self._stream(sim.sleep, 0.0, events, complete=True)
        options = (req.get("options") or {}) if native_chat else {}
        context = _native_context(sim, options)
        max_tokens = options.get("num_predict") if native_chat else req.get("max_tokens")
        if native_chat:
            prompt = prompt_token_estimate(req["messages"])
            max_tokens = native.answer_budget(req, max_tokens, prompt, context)
        thinks = req.get("think") is not False if native_chat else wire.thinks(req)
        plan = plan_completion(
            req["messages"],
            max_tokens=max_tokens if max_tokens is None or max_tokens >= 0 else None,
            answer_words=cfg.answer_words,
            reasoning_words=cfg.reasoning_words if thinks else 0,
            echo_prefill=cfg.echo_prefill,
            context_window=context if native_chat else cfg.context_window,
            end_token=cfg.end_token,
            directive_restarts=cfg.directive_restarts,
            findings_line_offset=cfg.findings_line_offset,
            answer=structured.answer(
                req, req["messages"], cfg.structured_faults, native=native_chat
            ),
        )
        if cfg.prompt_cache != "none" and not native_chat:
            hit = sim.prefix_cache.serve(
                req["model"], req["messages"], cfg.prompt_cache, plan.prompt_tokens
            )
            plan = dataclasses.replace(plan, cached_tokens=hit)
        loaded_before = sim.load(req["model"], context)
        slot = sim.slot()
        try:
            if slot is not None and not sim.acquire(slot):
                return self._reset()
        except Reject as busy:  # more waiting than the queue takes
            return self._send_json(busy.status, busy.body)
        try:
            if native_chat:
                self._native(sim, cfg, req, plan, fault, loaded_before)
            else:
                self._generate(sim, cfg, req, plan, fault, f"chatcmpl-{seq % 999}")
        finally:
            if slot is not None:
                slot.release()

    def _generate(
        self,
        sim: State,
        cfg: SimulatorConfig,
        req: dict[str, Any],
        plan: Plan,
        fault: str | None,
        ident: str,
    ) -> None:
        model = req["model"]
        stream = req.get("stream") is True and fault != "huge"
        if not stream:
            if not sim.sleep(cfg.latency):
                return self._reset()
            with_usage = not cfg.omit_usage
            body = wire.completion(
                plan,
                model=model,
                ident=ident,
                with_usage=with_usage,
                fault=fault,
                details=cfg.usage_details,
                cache=cfg.prompt_cache,
            )
            return self._send_whole(body, fault)
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
            role_chunk=cfg.role_chunk,
            include_usage=include_usage,
            details=cfg.usage_details,
            cache=cfg.prompt_cache,
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
        self._stream(sim.sleep, cfg.latency, events, complete=fault != "cut-stream")

    def _native(
        self,
        sim: State,
        cfg: SimulatorConfig,
        req: dict[str, Any],
        plan: Plan,
        fault: str | None,
        loaded_before: bool,
    ) -> None:
        """Answer ``/api/chat``: NDJSON lines when streaming (the default), else one object."""
        model = req["model"]
        if req.get("stream", True) is not True or fault == "huge":
            if not sim.sleep(cfg.latency):
                return self._reset()
            body = native.reply(plan, model, loaded_before=loaded_before)
            if fault is not None:
                native.mutate(body, fault)
            return self._send_whole(body, fault)
        events = native.lines(plan, model, loaded_before=loaded_before, fault=fault)
        if fault == "malformed":
            events = [b'{"model":\n']
            self.close_connection = True
        elif fault == "cut-stream":
            events = events[: (len(events) - 1) // 2]
            self.close_connection = True
        complete = fault != "cut-stream"
        self._stream(sim.sleep, cfg.latency, events, complete, ctype=native.NDJSON)
