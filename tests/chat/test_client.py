"""The client: retries through every transient fault, refuses garbage, reads both wire shapes.

Most tests script the simulator's faults; the few shapes the simulator does not produce
(400 and 403 answers, SSE comment lines, a stream without ``[DONE]``, an error body echoing
the request's headers) come from :class:`Stub`, a tiny real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.chat.retry import parse_retry_after
from deepseek_review.testing.simulator import GARBAGE_FAULTS, TRANSIENT_FAULTS, Simulator
from tests.support.chat import (
    assert_nothing_written,
    chunk,
    error_json,
    expected_answer,
    one_error_line,
    sse,
)
from tests.support.cli import files_under, review
from tests.support.ports import closed_port
from tests.support.stubs import Reply

Cli = Callable[..., Any]
MakeSim = Callable[..., Simulator]


# --------------------------------------------------------------------------- a stub server


USAGE_CHUNK = {
    "choices": [],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}


# --------------------------------------------------------------------------- helpers


def answer_text(repo: Path, result: dict[str, Any]) -> str:
    path: str = result["segments"][0]["answer_path"]
    return (repo / path).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- transient faults


def _sim_for(kind: str, make_simulator: MakeSim) -> tuple[Simulator, tuple[str, ...]]:
    if kind == "stall":
        return make_simulator(stall_seconds=5.0), ("--read-timeout", "0.3")
    if kind == "429":
        return make_simulator(retry_after=0.05), ()
    return make_simulator(), ()


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
@pytest.mark.parametrize("kind", TRANSIENT_FAULTS)
def test_retry_recovers_from_a_transient_fault(repo, make_simulator, cli, kind, stream):
    sim, extra = _sim_for(kind, make_simulator)
    sim.script_faults([kind])
    r = review(cli, sim.base_url, stream, *extra)
    assert r.code == 0, r.err
    requests = sim.chat_requests()
    assert [q.fault for q in requests] == [kind, None]
    assert r.json()["segments"][0]["attempts"] == 2
    assert answer_text(repo, r.json()) == expected_answer(sim, requests[1].body)["content"]
    assert "attempt 1/5 failed" in r.err


def test_retry_recovers_after_several_faults_in_a_row(repo, make_simulator, cli):
    sim = make_simulator()
    sim.script_faults(["500", "reset", "malformed", "503"])
    r = review(cli, sim.base_url)
    assert r.code == 0, r.err
    assert r.json()["segments"][0]["attempts"] == 5
    record = json.loads((repo / r.json()["segments"][0]["record_path"]).read_text())
    assert record["response"]["attempts"] == 5


def test_every_retry_sends_the_same_bytes(repo, make_simulator, cli):
    sim = make_simulator()
    sim.script_faults(["502", "cut-stream"])
    assert review(cli, sim.base_url).code == 0
    bodies = {q.body for q in sim.chat_requests()}
    assert len(bodies) == 1


def test_retry_after_header_is_honoured(repo, make_simulator, cli):
    sim = make_simulator(retry_after=0.4)
    sim.script_faults(["429"])
    started = time.monotonic()
    r = review(cli, sim.base_url)
    assert r.code == 0, r.err
    assert time.monotonic() - started >= 0.4
    assert "rate limit exceeded" in r.err


def test_transient_fault_that_persists_fails_with_exit_5_after_max_attempts(
    repo, make_simulator, cli
):
    sim = make_simulator(fault_rate=1.0, fault_kinds=("503",))
    r = review(cli, sim.base_url, "--max-attempts", "3")
    assert r.code == 5
    assert len(sim.chat_requests()) == 3
    line = one_error_line(r.err)
    assert "server busy, please try again" in line
    assert "after 3 attempts" in line
    assert_nothing_written(repo)


def test_unreachable_server_fails_with_exit_5_saying_so(repo, cli):
    r = review(cli, f"http://127.0.0.1:{closed_port()}", "--max-attempts", "2")
    assert r.code == 5
    line = one_error_line(r.err)
    assert "cannot reach" in line
    assert "ollama serve" in line
    assert_nothing_written(repo)


def test_read_timeout_is_reported_with_the_option_to_raise(repo, make_simulator, cli):
    sim = make_simulator(stall_seconds=5.0, fault_rate=1.0, fault_kinds=("stall",))
    r = review(cli, sim.base_url, "--read-timeout", "0.2", "--max-attempts", "2")
    assert r.code == 5
    assert "--read-timeout" in one_error_line(r.err)


# --------------------------------------------------------------------------- never retried


def test_401_is_not_retried_and_says_to_set_the_key(repo, make_simulator, cli):
    sim = make_simulator(api_key="the-right-key")
    r = review(cli, sim.base_url)
    assert r.code == 5
    assert len(sim.chat_requests()) == 1
    line = one_error_line(r.err)
    assert "401" in line and "unauthorized" in line
    assert "OLLAMA_API_KEY" in line
    assert_nothing_written(repo)


def test_404_is_not_retried_and_names_the_model_to_pull(repo, make_simulator, cli):
    sim = make_simulator(models=frozenset({"other-model"}))
    r = review(cli, sim.base_url, "--model", "deepseek-v4-flash")
    assert r.code == 5
    assert len(sim.chat_requests()) == 1
    line = one_error_line(r.err)
    assert "404" in line
    assert "ollama pull deepseek-v4-flash" in line
    assert_nothing_written(repo)


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_client_error_is_sent_exactly_once(repo, make_stub, cli, status):
    stub = make_stub([Reply(status, error_json({"message": f"refused with {status}"}))])
    r = review(cli, stub.base_url)
    assert r.code == 5
    assert len(stub.seen) == 1
    assert f"refused with {status}" in one_error_line(r.err)
    assert_nothing_written(repo)


def test_openai_shaped_error_message_is_shown(repo, make_stub, cli):
    body = json.dumps(
        {
            "error": {
                "message": 'invalid reasoning value: "x"',
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        }
    )
    stub = make_stub([Reply(400, body.encode())])
    r = review(cli, stub.base_url)
    assert 'invalid reasoning value: "x"' in one_error_line(r.err)


def test_string_shaped_error_message_is_shown(repo, make_stub, cli):
    stub = make_stub([Reply(403, error_json("cloud models are disabled on this server"))])
    r = review(cli, stub.base_url)
    assert "cloud models are disabled on this server" in one_error_line(r.err)


def test_string_shaped_429_message_is_shown_when_it_persists(repo, make_simulator, cli):
    sim = make_simulator(fault_rate=1.0, fault_kinds=("429-string",))
    r = review(cli, sim.base_url, "--max-attempts", "2")
    assert r.code == 5
    assert "reached your hourly usage limit" in one_error_line(r.err)


def test_html_error_page_is_summarised_by_its_title(repo, make_simulator, cli):
    sim = make_simulator(fault_rate=1.0, fault_kinds=("html",))
    r = review(cli, sim.base_url, "--max-attempts", "2")
    assert r.code == 5
    line = one_error_line(r.err)
    assert "502 Bad Gateway" in line
    assert "<html>" not in line


def test_redirect_is_not_followed_and_names_the_target(repo, make_stub, cli):
    stub = make_stub(
        [Reply(307, b"", {"Location": "https://elsewhere.example/v1/chat/completions"})]
    )
    r = review(cli, stub.base_url)
    assert r.code == 5
    assert len(stub.seen) == 1
    assert "https://elsewhere.example/v1/chat/completions" in one_error_line(r.err)


# --------------------------------------------------------------------------- garbage answers


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
@pytest.mark.parametrize("kind", [k for k in GARBAGE_FAULTS if k not in ("html", "huge")])
def test_garbage_answer_that_persists_fails_with_exit_6_and_writes_nothing(
    repo, make_simulator, cli, kind, stream
):
    sim = make_simulator(fault_rate=1.0, fault_kinds=(kind,))
    r = review(cli, sim.base_url, stream, "--max-attempts", "3")
    assert r.code == 6, r.err
    assert len(sim.chat_requests()) == 3
    assert "after 3 attempts" in one_error_line(r.err)
    assert_nothing_written(repo)


def test_garbage_answer_once_is_retried_to_success(repo, make_simulator, cli):
    sim = make_simulator()
    sim.script_faults(["no-choices", "content-not-string"])
    r = review(cli, sim.base_url)
    assert r.code == 0, r.err
    assert r.json()["segments"][0]["attempts"] == 3


def test_huge_answer_is_refused_without_reading_it_all(repo, make_simulator, cli):
    sim = make_simulator(fault_rate=1.0, fault_kinds=("huge",))
    r = review(cli, sim.base_url, "--max-attempts", "1")
    assert r.code == 6
    assert "bytes" in one_error_line(r.err)
    assert_nothing_written(repo)


def test_stream_without_done_is_a_failed_attempt(repo, make_stub, cli):
    body = sse(chunk({"role": "assistant", "content": "Hi"}), chunk({}, "stop"), done=False)
    stub = make_stub([Reply(200, body, content_type="text/event-stream")])
    r = review(cli, stub.base_url, "--max-attempts", "2")
    assert r.code == 6
    assert len(stub.seen) == 2
    assert "[DONE]" in one_error_line(r.err)
    assert_nothing_written(repo)


def test_stream_without_finish_chunk_is_a_failed_attempt(repo, make_stub, cli):
    body = sse(chunk({"role": "assistant", "content": "Hi"}))
    stub = make_stub([Reply(200, body, content_type="text/event-stream")])
    r = review(cli, stub.base_url, "--max-attempts", "2")
    assert r.code == 6
    assert "finish chunk" in one_error_line(r.err)
    assert_nothing_written(repo)


def test_error_in_the_middle_of_a_stream_is_a_failed_attempt(repo, make_stub, cli):
    body = sse(chunk({"role": "assistant", "content": "Hi"}), {"error": "runner crashed"})
    stub = make_stub([Reply(200, body, content_type="text/event-stream")])
    r = review(cli, stub.base_url, "--max-attempts", "2")
    assert r.code == 6
    assert "runner crashed" in one_error_line(r.err)


def test_stream_with_sse_comments_and_other_fields_is_read(repo, make_stub, cli):
    body = (
        b": keep-alive\n\n"
        b"event: message\nid: 1\nretry: 100\n"
        b'data:{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\n'
        b": keep-alive\n\n" + sse(chunk({"content": "lo."}), chunk({}, "stop"), USAGE_CHUNK)
    )
    stub = make_stub([Reply(200, body, content_type="text/event-stream")])
    r = review(cli, stub.base_url)
    assert r.code == 0, r.err
    assert answer_text(repo, r.json()) == "Hello."
    assert r.json()["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def test_stream_answered_as_plain_json_is_read(repo, make_stub, cli):
    body = json.dumps(
        {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Ok."},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )
    stub = make_stub([Reply(200, body.encode())])
    r = review(cli, stub.base_url, "--stream")
    assert r.code == 0, r.err
    assert answer_text(repo, r.json()) == "Ok."


def test_legacy_stream_framing_is_read(repo, make_simulator, cli):
    sim = make_simulator(legacy_stream=True)
    r = review(cli, sim.base_url)
    assert r.code == 0, r.err
    assert r.json()["finish_reason"] == "stop"
    assert (
        answer_text(repo, r.json()) == expected_answer(sim, sim.chat_requests()[0].body)["content"]
    )


def test_deepseek_reasoning_content_field_is_read_as_reasoning(repo, make_stub, cli):
    body = sse(
        chunk({"role": "assistant", "content": "", "reasoning_content": "Hmm."}),
        chunk({"content": "Done."}),
        chunk({}, "stop"),
        USAGE_CHUNK,
    )
    stub = make_stub([Reply(200, body, content_type="text/event-stream")])
    r = review(cli, stub.base_url, "--keep-reasoning")
    assert r.code == 0, r.err
    seg = r.json()["segments"][0]
    assert (repo / seg["reasoning_path"]).read_text() == "Hmm."
    assert answer_text(repo, r.json()) == "Done."


def test_surrogate_pair_split_across_chunks_is_joined_into_one_character(repo, make_stub, cli):
    body = (
        b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"ok \\ud83d"},'
        b'"finish_reason":null}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"\\ude00 done"},'
        b'"finish_reason":null}]}\n\n' + sse(chunk({}, "stop"), USAGE_CHUNK)
    )
    stub = make_stub([Reply(200, body, content_type="text/event-stream")])
    r = review(cli, stub.base_url)
    assert r.code == 0, r.err
    assert answer_text(repo, r.json()) == "ok \N{GRINNING FACE} done"


@pytest.mark.parametrize("stream", [True, False])
def test_unpaired_surrogate_in_the_answer_is_a_bad_response(repo, make_stub, cli, stream):
    if stream:
        body = sse(chunk({"role": "assistant", "content": "x"}), chunk({}, "stop"))
        body = body.replace(b'"x"', b'"bad \\ud83d half"')
        reply = Reply(200, body, content_type="text/event-stream")
    else:
        message = {"role": "assistant", "content": "x"}
        text = json.dumps({"choices": [{"index": 0, "finish_reason": "stop", "message": message}]})
        reply = Reply(200, text.replace('"x"', '"bad \\ud83d half"').encode())
    stub = make_stub([reply])
    r = review(cli, stub.base_url, "--stream" if stream else "--no-stream", "--max-attempts", "2")
    assert r.code == 6, r.err
    assert "surrogate" in one_error_line(r.err)
    assert_nothing_written(repo)


def test_max_attempts_below_one_is_refused(repo, simulator, cli):
    r = review(cli, simulator.base_url, "--max-attempts", "0")
    assert r.code == 2
    assert "--max-attempts" in r.err
    assert simulator.chat_requests() == []


@pytest.mark.parametrize("option", ["--read-timeout", "--connect-timeout"])
def test_non_positive_timeout_is_refused(repo, simulator, cli, option):
    r = review(cli, simulator.base_url, option, "0")
    assert r.code == 2
    assert f"{option} must be a positive number of seconds, got 0.0" in r.err
    assert simulator.chat_requests() == []


# --------------------------------------------------------------------------- usage, reasoning


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_usage_is_the_servers_own_count(repo, simulator, cli, stream):
    r = review(cli, simulator.base_url, stream)
    assert r.code == 0, r.err
    usage = r.json()["usage"]
    receipt = json.loads((repo / r.json()["segments"][0]["receipt_path"]).read_text())
    assert receipt["usage"] == usage
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    assert r.json()["usage_reported"] is True


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_usage_absent_gives_zeros_a_warning_and_usage_reported_false(
    repo, make_simulator, cli, stream
):
    sim = make_simulator(omit_usage=True)
    r = review(cli, sim.base_url, stream)
    assert r.code == 0, r.err
    data = r.json()
    seg = data["segments"][0]
    receipt = json.loads((repo / seg["receipt_path"]).read_text())
    record = json.loads((repo / seg["record_path"]).read_text())
    zeros = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert receipt["usage"] == zeros
    assert data["usage_reported"] is False
    assert seg["usage_reported"] is False
    assert record["response"]["usage_reported"] is False
    assert record["response"]["usage"] is None
    assert "no token usage" in r.err


def test_reasoning_is_not_written_without_keep_reasoning(repo, make_simulator, cli):
    sim = make_simulator(reasoning_words=12)
    r = review(cli, sim.base_url)
    assert r.code == 0, r.err
    seg = r.json()["segments"][0]
    assert seg["reasoning_path"] is None
    assert not [p for p in files_under(repo / "reviews") if p.endswith(".reasoning.md")]
    expected = expected_answer(sim, sim.chat_requests()[0].body)
    assert expected["reasoning"] not in answer_text(repo, r.json())


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_reasoning_is_written_to_its_own_file_with_keep_reasoning(
    repo, make_simulator, cli, stream
):
    sim = make_simulator(reasoning_words=12)
    r = review(cli, sim.base_url, stream, "--keep-reasoning")
    assert r.code == 0, r.err
    seg = r.json()["segments"][0]
    expected = expected_answer(sim, sim.chat_requests()[0].body)
    assert seg["reasoning_path"].endswith(".reasoning.md")
    assert (repo / seg["reasoning_path"]).read_text(encoding="utf-8") == expected["reasoning"]
    assert answer_text(repo, r.json()) == expected["content"]
    assert seg["reasoning_path"] in r.out


# --------------------------------------------------------------------------- helpers


def test_retry_after_seconds_are_read_and_capped():
    assert parse_retry_after("2", cap=120) == 2.0
    assert parse_retry_after("0.5", cap=120) == 0.5
    assert parse_retry_after("9999", cap=120) == 120
    assert parse_retry_after("-3", cap=120) == 0.0
    assert parse_retry_after(None, cap=120) is None
    assert parse_retry_after("soon", cap=120) is None
    assert parse_retry_after("nan", cap=120) is None


def test_retry_after_http_date_is_read():
    from email.utils import formatdate

    value = parse_retry_after(formatdate(time.time() + 30, usegmt=True), cap=120)
    assert value is not None and 25 <= value <= 31


def _plain_web_server() -> tuple[Any, str]:
    """The standard library's file server on a free loopback port (it answers POST 501)."""
    import functools
    import http.server
    import tempfile
    import threading

    folder = tempfile.mkdtemp()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=folder)
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def test_a_plain_web_server_is_named_as_not_a_chat_endpoint(repo, cli):
    server, url = _plain_web_server()
    try:
        r = review(cli, url)
    finally:
        server.shutdown()
        server.server_close()
    assert r.code == 5
    assert one_error_line(r.err).endswith("(is this a chat endpoint? check --endpoint)")
    assert_nothing_written(repo)


@pytest.mark.parametrize(
    "reply",
    [
        Reply(405, b"Method Not Allowed", content_type="text/plain"),
        Reply(501, b"Not Implemented", content_type="text/plain"),
        Reply(404, b"<html><title>Not Found</title></html>", content_type="text/html"),
        Reply(400, b"<!DOCTYPE html><html><title>Bad</title></html>", content_type="text/html"),
    ],
)
def test_a_web_page_or_a_refused_method_asks_whether_it_is_a_chat_endpoint(
    repo, make_stub, cli, reply
):
    stub = make_stub([reply])
    r = review(cli, stub.base_url)
    assert r.code == 5
    assert "is this a chat endpoint? check --endpoint" in one_error_line(r.err)


def test_a_json_refusal_still_names_model_and_extra_body(repo, make_stub, cli):
    stub = make_stub([Reply(400, error_json({"message": "bad field"}))])
    r = review(cli, stub.base_url)
    assert "check --model and --extra-body" in one_error_line(r.err)


def test_retry_lines_count_the_attempts_a_failure_of_that_kind_gets(repo, cli):
    """Nothing listening on this machine is tried twice, not --max-attempts times: every line
    counts against the same limit, and the error says why it stopped early."""
    url = f"http://127.0.0.1:{closed_port()}"
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", url,
            "--max-attempts", "5", "--retry-wait", "0")  # fmt: skip
    assert r.code == 5
    assert "attempt 1/2 failed: cannot reach" in r.err
    assert "/5" not in r.err
    assert "(after 2 attempts; a failure of this kind is tried at most 2 times)" in r.err


def test_retry_lines_of_a_failure_retried_in_full_count_to_max_attempts(repo, make_simulator, cli):
    sim = make_simulator(fault_rate=1.0, fault_kinds=("500",))
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url,
            "--max-attempts", "3", "--retry-wait", "0")  # fmt: skip
    assert r.code == 5
    assert [ln.split(" failed")[0] for ln in r.err.splitlines() if "failed:" in ln] == [
        "deepseek-review: attempt 1/3",
        "deepseek-review: attempt 2/3",
    ]
    assert r.err.rstrip().endswith("(after 3 attempts)")
