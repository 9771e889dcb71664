"""The chat endpoint in tests: requests to the simulator, SSE streams and chunks as a server
writes them, the answer the simulator gives, and the one error line a refusal prints."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

from deepseek_review.chat import wire as chatwire
from deepseek_review.testing.simulator import Simulator
from tests.support.cli import CliResult, files_under

MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You review code. Be precise."},
    {"role": "user", "content": "Review `stats.py`: def mean(xs): return sum(xs) / len(xs)"},
]


def chat(sim: Simulator, headers: dict[str, str] | None = None, **payload: Any) -> Reply:
    payload.setdefault("model", "deepseek-v4-flash")
    payload.setdefault("messages", MESSAGES)
    body = json.dumps(payload).encode()
    return request(
        sim,
        "POST",
        "/v1/chat/completions",
        body,
        {"Content-Type": "application/json"} | (headers or {}),
    )


def error_json(message: Any) -> bytes:
    return json.dumps({"error": message}).encode()


def sse(*events: Any, done: bool = True, extra: bytes = b"") -> bytes:
    out = extra
    for e in events:
        out += b"data: " + json.dumps(e).encode() + b"\n\n"
    if done:
        out += b"data: [DONE]\n\n"
    return out


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def expected_answer(sim: Simulator, body: bytes) -> dict[str, Any]:
    """The message the simulator gives for ``body`` when asked directly, without streaming."""
    req = json.loads(body)
    req["stream"] = False
    req.pop("stream_options", None)
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=10)
    try:
        conn.request(
            "POST",
            "/v1/chat/completions",
            json.dumps(req).encode(),
            {"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        data = json.loads(resp.read())
    finally:
        conn.close()
    assert resp.status == 200, data
    message: dict[str, Any] = data["choices"][0]["message"]
    return message


def assert_nothing_written(repo: Path) -> None:
    assert files_under(repo / "reviews") == []


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("deepseek-review: error:")]
    assert len(lines) == 1, err
    assert err.rstrip("\n").endswith(lines[0])
    assert "Traceback" not in err
    return lines[0]


def stream_chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    return b"data: " + json.dumps({"choices": [{"delta": delta, "finish_reason": finish}]}).encode()


def read_stream(lines: list[bytes]) -> chatwire.StreamState:
    st = chatwire.StreamState()
    chatwire.read_events(st, lines, max_line_bytes=1 << 20)
    return st


def refused(r: CliResult, code: int, *needles: str) -> str:
    """The one error line of a command that had to fail with ``code``, saying ``needles``."""
    assert r.code == code, r.err
    line = error_line(r)
    assert all(n in line for n in needles), line
    return line


def answers(repo: Path, result: CliResult) -> list[str]:
    return [(repo / s["answer_path"]).read_text("utf-8") for s in result.json()["segments"]]


def primary_messages(sim: Simulator) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = json.loads(sim.chat_requests()[0].body)["messages"]
    return messages


def request(
    sim: Simulator,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()


def error_line(r: CliResult) -> str:
    lines = [ln for ln in r.err.splitlines() if ln.startswith(ERROR)]
    assert len(lines) == 1, r.err
    return lines[0]


ERROR = "deepseek-review: error: "


class Reply:
    """One HTTP exchange's result: status, lower-cased headers, raw body."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)

    def events(self) -> list[Any]:
        """SSE data payloads in order: parsed JSON objects, or the string "[DONE]"."""
        text = self.body.decode("utf-8")
        assert text.endswith("\n\n"), text[-200:]
        out: list[Any] = []
        for event in text[:-2].split("\n\n"):
            assert event.startswith("data: "), event
            data = event[len("data: ") :]
            out.append(data if data == "[DONE]" else json.loads(data))
        return out
