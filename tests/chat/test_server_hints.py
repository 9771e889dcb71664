"""The server's real reason, and advice that fits the server (``--server``).

What a user met in the first hour against the simulator, llama.cpp's ``llama-server`` and
llama-cpp-python: a refused loopback connection retried for 12 s, a prompt over ``n_ctx`` that
came back as an empty stream (retried, exit 6) while the same request without streaming got a
400 with the real reason, ``ollama pull`` suggested to a llama.cpp user, and a redirect's
``Location`` printed raw. Servers here are real, on 127.0.0.1: the simulator (its
``context_overflow`` knob plays llama.cpp and llama-cpp-python) or a scripted stub.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import Any

import pytest

from deepseek_review.chat.client import ChatClient
from deepseek_review.chat.types import RetryPolicy
from deepseek_review.errors import ServerError
from deepseek_review.testing.simulator import Simulator
from tests.support.chat import assert_nothing_written, chunk, error_json, one_error_line, sse
from tests.support.cli import review, use_key
from tests.support.hostile import Hostile, head
from tests.support.ports import closed_port
from tests.support.stubs import Reply

Cli = Callable[..., Any]
MakeSim = Callable[..., Simulator]

#: Fewer prompt tokens than the spec the tests send: every request overflows.
TINY_CONTEXT = 10
LLAMA_CONTEXT_MESSAGE = "the request exceeds the available context size"


def own_address() -> str:
    """This machine's address on its network interface (not loopback); skips without one.
    No packet is sent: connecting a UDP socket only picks the route."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("198.51.100.1", 9))  # TEST-NET-2: never reached
            host: str = s.getsockname()[0]
        except OSError:
            pytest.skip("no network interface besides loopback")
    if host.startswith("127.") or host == "0.0.0.0":
        pytest.skip("no network interface besides loopback")
    return host


# --------------------------------------------------------------------------- nothing listening


def test_refused_loopback_connection_is_tried_twice_at_most_and_fails_fast(repo, cli):
    port = closed_port()
    started = time.monotonic()
    # The default policy (5 attempts, backoff from 1 s): the retry wait is not lowered here.
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", f"http://127.0.0.1:{port}")
    elapsed = time.monotonic() - started
    assert r.code == 5
    line = one_error_line(r.err)
    assert "Connection refused" in line
    assert "(after 2 attempts; a failure of this kind is tried at most 2 times)" in line
    assert elapsed < 4.0, f"took {elapsed:.1f}s"
    assert_nothing_written(repo)


def test_refused_connection_to_another_host_keeps_the_retry_policy(repo, cli):
    host = own_address()
    r = review(cli, f"http://{host}:{closed_port(host)}", "--max-attempts", "4")
    assert r.code == 5
    line = one_error_line(r.err)
    assert "Connection refused" in line
    assert "(after 4 attempts)" in line


START_WORDS = {"ollama": "ollama serve", "llama.cpp": "llama-server", "vllm": "vllm serve"}


@pytest.mark.parametrize(
    ("server", "start"),
    [
        ("ollama", "`OLLAMA_HOST=127.0.0.1:{port} ollama serve`"),
        ("llama.cpp", "`llama-server -m MODEL.gguf --port {port}`"),
        ("vllm", "`vllm serve deepseek-v4-flash --port {port}`"),
    ],
)
def test_refused_loopback_connection_says_how_to_start_that_server(repo, cli, server, start):
    port = closed_port()
    r = review(cli, f"http://127.0.0.1:{port}", "--server", server)
    assert r.code == 5
    line = one_error_line(r.err)
    assert start.format(port=port) in line
    assert not [w for s, w in START_WORDS.items() if s != server and w in line], line
    assert "check --endpoint" in line


def test_library_client_without_a_server_kind_gives_no_start_command():

    port = closed_port()
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    with (
        ChatClient(url, policy=RetryPolicy(max_attempts=5, backoff_initial=0.01)) as c,
        pytest.raises(ServerError) as caught,
    ):
        c.complete(b"{}", model="m", stream=False)
    assert "after 2 attempts" in caught.value.message
    assert f"nothing is listening on 127.0.0.1:{port}" in caught.value.hint
    assert "ollama" not in caught.value.hint


def test_default_endpoint_with_nothing_running_names_endpoint_and_ollama_host(repo, cli):
    if port_is_taken(11434):
        pytest.skip("something listens on the default port 11434 here")
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--retry-wait", "0.01")
    assert r.code == 5
    line = one_error_line(r.err)
    assert "`ollama serve`" in line
    assert "--endpoint" in line and "OLLAMA_HOST" in line


def streaming(make_stub: Callable[..., Any], body: bytes) -> Any:
    """A stub that answers every request with the event stream ``body``."""
    return make_stub([Reply(200, body, content_type="text/event-stream")])


def port_is_taken(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


# --------------------------------------------------------------------------- the real reason


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
@pytest.mark.parametrize("overflow", ["refuse", "error-line", "error-chunk"])
def test_prompt_over_the_context_size_gives_the_servers_reason_once_in_both_modes(
    repo, make_simulator, cli, overflow, stream
):
    sim = make_simulator(context_window=TINY_CONTEXT, context_overflow=overflow, llama_stream=True)
    r = review(cli, sim.base_url, "--server", "llama.cpp", stream)
    assert r.code == 5
    assert len(sim.chat_requests()) == 1  # the same prompt would overflow again
    line = one_error_line(r.err)
    assert LLAMA_CONTEXT_MESSAGE in line
    assert "send less context" in line and "llama-server -c <tokens>" in line
    assert "llama-cpp-python: --n_ctx <tokens>" in line  # its own flag for the same
    assert_nothing_written(repo)


def test_stream_that_closes_with_no_data_says_so_and_points_at_no_stream(repo, make_simulator, cli):
    sim = make_simulator(context_window=TINY_CONTEXT, context_overflow="empty")
    r = review(cli, sim.base_url)
    assert r.code == 6
    line = one_error_line(r.err)
    assert "closed the stream with no data at all" in line
    assert "--no-stream" in line
    assert len(sim.chat_requests()) == 2  # worth one more try, not five
    assert_nothing_written(repo)


def test_stream_cut_before_any_data_says_so_and_keeps_the_retry_policy(repo, cli):
    chunked = head("text/event-stream", "Transfer-Encoding: chunked")
    server = Hostile(lambda conn, stop: conn.sendall(chunked))  # then closes, mid-body
    try:
        r = review(cli, server.base_url, "--max-attempts", "3")
    finally:
        server.stop()
    assert r.code == 6
    line = one_error_line(r.err)
    assert "answered 200 and the connection closed before any data" in line
    assert "(after 3 attempts)" in line  # a crash, perhaps: worth the whole policy
    assert len(server.seen) == 3


def test_the_server_that_streams_nothing_gives_its_reason_without_streaming(
    repo, make_simulator, cli
):
    sim = make_simulator(context_window=TINY_CONTEXT, context_overflow="empty")
    r = review(cli, sim.base_url, "--no-stream")
    assert r.code == 5
    assert len(sim.chat_requests()) == 1
    assert LLAMA_CONTEXT_MESSAGE in one_error_line(r.err)


def test_sse_error_event_is_the_servers_error(repo, make_stub, cli):
    body = b'event: error\ndata: {"type": "error", "error": {"type": "invalid_request_error", '
    body += b'"message": "prompt is too long: 210000 tokens > 200000 maximum"}}\n\n'
    stub = streaming(make_stub, body)
    r = review(cli, stub.base_url, "--server", "vllm")
    assert r.code == 5
    assert len([s for s in stub.seen if s.chat]) == 1
    line = one_error_line(r.err)
    assert "prompt is too long: 210000 tokens > 200000 maximum" in line
    assert "--max-model-len" in line


def test_error_chunk_with_a_busy_status_is_retried_and_reported_in_the_servers_words(
    repo, make_stub, cli
):
    body = sse(chunk({"content": "Half an"}), done=False)
    body += b'data: {"error": {"code": 503, "message": "slot unavailable"}}\n\n'
    stub = streaming(make_stub, body)
    r = review(cli, stub.base_url, "--max-attempts", "3")
    assert r.code == 5
    assert len(stub.seen) == 3
    line = one_error_line(r.err)
    assert "slot unavailable" in line and "(after 3 attempts)" in line


def test_error_null_in_stream_chunks_is_no_error(repo, make_stub, cli):
    pieces = [chunk({"role": "assistant", "content": "Fine."}), chunk({}, "stop")]
    body = sse(*({**p, "error": None} for p in pieces))
    stub = streaming(make_stub, body)
    r = review(cli, stub.base_url)
    assert r.code == 0, r.err
    assert len(stub.seen) == 1


def test_error_object_in_a_200_json_answer_is_handled_as_its_status(repo, make_stub, cli):
    body = error_json({"code": 400, "message": "invalid 'temperature': must be at most 2"})
    stub = make_stub([Reply(200, body)])
    r = review(cli, stub.base_url, "--no-stream", "--max-attempts", "3")
    assert r.code == 5
    assert len(stub.seen) == 1
    assert "invalid 'temperature': must be at most 2" in one_error_line(r.err)


def test_400_over_the_context_size_gives_the_context_hint_for_the_server(repo, make_stub, cli):
    message = (
        "This model's maximum context length is 4096 tokens. However, you requested 9000 "
        "tokens (8000 in the messages, 1000 in the completion)."
    )
    body = json.dumps({"object": "error", "message": message, "code": 400}).encode()
    stub = make_stub([Reply(400, body)])
    r = review(cli, stub.base_url, "--server", "vllm")
    assert r.code == 5
    line = one_error_line(r.err)
    assert "maximum context length is 4096 tokens" in line
    assert "--max-model-len" in line and "--max-tokens" in line


# --------------------------------------------------------------------------- 404 and 401


@pytest.mark.parametrize(
    ("server", "says"),
    [
        ("ollama", "ollama pull deepseek-v4-flash"),
        ("llama.cpp", "the path is wrong: check --endpoint"),
        ("vllm", "--served-model-name"),
        ("deepseek", "check --model"),
    ],
)
def test_404_advice_fits_the_server(repo, make_stub, cli, server, says):
    body = error_json({"code": 404, "message": "File Not Found", "type": "not_found_error"})
    stub = make_stub([Reply(404, body)])
    r = review(cli, stub.base_url, "--server", server)
    assert r.code == 5
    line = one_error_line(r.err)
    assert "File Not Found" in line
    assert says in line
    if server != "ollama":
        assert "ollama pull" not in line


def test_401_over_plain_http_without_a_key_says_the_default_key_goes_over_https_only(
    repo, make_simulator, cli, monkeypatch
):
    key = "sk-default-0123456789abcdef"
    monkeypatch.setenv("OLLAMA_API_KEY", key)
    sim = make_simulator(api_key=key)
    r = review(cli, sim.base_url)
    assert r.code == 5
    assert "authorization" not in sim.chat_requests()[0].headers
    line = one_error_line(r.err)
    assert (
        "no key was sent: the default OLLAMA_API_KEY goes over https only; "
        "name it with --api-key-env to send it here"
    ) in line
    assert key not in r.out + r.err


def test_401_for_a_named_key_names_that_variable(repo, make_simulator, cli, monkeypatch):
    use_key(monkeypatch, "sk-wrong-0123456789abcdef", "MY_SERVER_KEY")
    sim = make_simulator(api_key="sk-right-0123456789abcdef")
    r = review(cli, sim.base_url)
    assert r.code == 5
    line = one_error_line(r.err)
    assert "the key in MY_SERVER_KEY was refused" in line
    assert "OLLAMA_API_KEY" not in line
    assert "sk-wrong" not in r.out + r.err


# --------------------------------------------------------------------------- redirects


def test_redirect_location_is_shown_escaped_without_userinfo_or_query(repo, make_stub, cli):
    location = "http://user:pw@127.0.0.1:9/v1\u202egnp.exe\u009b2J/chat?token=sk-abc123"
    raw = location.encode("utf-8").decode("latin-1")  # the header's bytes, as sent
    stub = make_stub([Reply(302, b"", {"Location": raw})])
    r = review(cli, stub.base_url)
    assert r.code == 5
    line = one_error_line(r.err)
    assert "(redirect to http://127.0.0.1:9/v1\\u202egnp.exe\\x9b2J/chat)" in line
    assert "\u202e" not in r.err and "\u009b" not in r.err
    assert "user:pw" not in r.err and "sk-abc123" not in r.err
