"""The simulator is the ground truth for client tests, so its own behaviour is pinned here.

Every test talks real HTTP to a simulator on 127.0.0.1 (http.client, no client library of
ours), so the wire shapes checked are the ones our client will meet.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from deepseek_review.testing.simulator import (
    ALL_FAULTS,
    GARBAGE_FAULTS,
    TOKEN_RE,
    TRANSIENT_FAULTS,
    RecordedRequest,
    Simulator,
    SimulatorConfig,
    full_answer,
)
from tests.support.chat import (
    MESSAGES,
    Reply,  # moved
    chat,
    request,
)

MakeSim = Callable[..., Simulator]

OTHER_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You review code. Be precise."},
    {"role": "user", "content": "Review `parse.py` instead."},
]


def content_of(reply: Reply) -> str:
    """The answer text of a non-streamed or streamed reply."""
    if reply.headers["content-type"].startswith("text/event-stream"):
        parts = [
            e["choices"][0]["delta"].get("content", "")
            for e in reply.events()
            if e != "[DONE]" and e["choices"]
        ]
        return "".join(parts)
    text: str = reply.json()["choices"][0]["message"]["content"]
    return text


def finish_of(reply: Reply) -> str:
    if reply.headers["content-type"].startswith("text/event-stream"):
        reasons = [
            e["choices"][0]["finish_reason"]
            for e in reply.events()
            if e != "[DONE]" and e["choices"] and e["choices"][0]["finish_reason"]
        ]
        assert len(reasons) == 1
        return str(reasons[0])
    return str(reply.json()["choices"][0]["finish_reason"])


# -- the deterministic answer ---------------------------------------------------------------


def test_full_answer_is_deterministic_and_looks_like_a_review() -> None:
    text = full_answer(MESSAGES)
    assert text == full_answer([dict(m) for m in MESSAGES])
    assert text != full_answer(OTHER_MESSAGES)
    assert "## " in text and "|---|" in text and "\n- " in text
    assert re.search(r"END-OF-REVIEW [0-9a-f]{8}\n\Z", text)
    assert not text.isascii()


@pytest.mark.parametrize("words", [2, 3, 17, 200, 1000])
def test_full_answer_has_exactly_the_configured_word_count(words: int) -> None:
    assert len(re.findall(r"\S+", full_answer(MESSAGES, words))) == words


def test_full_answer_ignores_messages_from_the_first_assistant_turn_on() -> None:
    longer = [*MESSAGES, {"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]
    assert full_answer(longer) == full_answer(MESSAGES)


@pytest.mark.parametrize(
    "text",
    ["", "  lead", "a b\n\nc  ", full_answer(MESSAGES), "σ_q → 数学\t"],  # noqa: RUF001
)
def test_token_re_tokens_join_back_to_the_text(text: str) -> None:
    assert "".join(TOKEN_RE.findall(text)) == text


# -- response shapes -----------------------------------------------------------------------


def test_non_streamed_response_has_ollama_shape(simulator: Simulator) -> None:
    reply = chat(simulator, model="deepseek-v4-flash:latest")
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert int(reply.headers["content-length"]) == len(reply.body)
    assert reply.body.endswith(b"}\n")
    body = reply.json()
    assert re.fullmatch(r"chatcmpl-\d+", body["id"])
    assert body["object"] == "chat.completion"
    assert isinstance(body["created"], int)
    assert body["model"] == "deepseek-v4-flash:latest"
    assert body["system_fingerprint"] == "fp_ollama"
    assert body["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": full_answer(MESSAGES)},
            "finish_reason": "stop",
        }
    ]
    usage = body["usage"]
    assert usage["completion_tokens"] == 200
    assert usage["total_tokens"] == usage["prompt_tokens"] + 200


def test_keep_alive_serves_several_requests_on_one_connection(simulator: Simulator) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", simulator.port, timeout=10)
    try:
        for stream in (False, True, False):
            payload = {"model": "m", "messages": MESSAGES, "stream": stream}
            conn.request("POST", "/v1/chat/completions", json.dumps(payload))
            resp = conn.getresponse()
            assert resp.status == 200
            assert resp.read()
    finally:
        conn.close()
    assert len(simulator.chat_requests()) == 3


def test_stream_framing_role_first_then_finish_delta_then_done(simulator: Simulator) -> None:
    reply = chat(simulator, stream=True)
    assert reply.headers["content-type"] == "text/event-stream"
    events = reply.events()
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all("role" not in c["choices"][0]["delta"] for c in chunks[1:])
    assert chunks[-1]["choices"] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert {c["id"] for c in chunks} == {chunks[0]["id"]}
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert all("usage" not in c for c in chunks)
    assert content_of(reply) == full_answer(MESSAGES)


def test_stream_usage_chunk_comes_only_with_include_usage(simulator: Simulator) -> None:
    reply = chat(simulator, stream=True, stream_options={"include_usage": True}, max_tokens=10)
    events = reply.events()
    assert events[-1] == "[DONE]"
    usage_chunk = events[-2]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["completion_tokens"] == 10
    assert events[-3]["choices"][0]["finish_reason"] == "length"
    assert sum("usage" in e for e in events[:-1]) == 1


def test_legacy_stream_framing_has_role_everywhere_and_no_empty_delta(
    make_simulator: MakeSim,
) -> None:
    sim = make_simulator(legacy_stream=True)
    reply = chat(sim, stream=True, stream_options={"include_usage": True})
    events = reply.events()
    assert events[-1] == "[DONE]"
    chunks = [e for e in events[:-1] if e["choices"]]
    assert all(c["choices"][0]["delta"]["role"] == "assistant" for c in chunks)
    assert all(c["choices"][0]["delta"] != {} for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"][0]["delta"]["content"]
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert events[-2]["choices"] == [] and events[-2]["usage"]["completion_tokens"] == 200
    assert content_of(reply) == full_answer(MESSAGES)


# -- continuations -------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_prefill_continuation_chain_reproduces_full_answer(
    simulator: Simulator, stream: bool
) -> None:
    answer, rounds = "", 0
    while True:
        messages = list(MESSAGES)
        if answer:
            messages.append({"role": "assistant", "content": answer, "prefix": True})
        reply = chat(simulator, messages=messages, max_tokens=7, stream=stream)
        answer += content_of(reply)
        rounds += 1
        if finish_of(reply) == "stop":
            break
        assert rounds < 100
    assert answer == full_answer(MESSAGES)
    assert rounds == 200 // 7 + 1


def test_directive_continuation_resumes_after_last_assistant_message(
    simulator: Simulator,
) -> None:
    full = full_answer(MESSAGES)
    first = content_of(chat(simulator, max_tokens=50))
    directive = [
        *MESSAGES,
        {"role": "assistant", "content": first},
        {"role": "user", "content": "Continue exactly where you stopped."},
    ]
    second = chat(simulator, messages=directive)
    assert first + content_of(second) == full
    assert finish_of(second) == "stop"


def test_prefill_that_drifted_resumes_from_the_common_prefix(simulator: Simulator) -> None:
    full = full_answer(MESSAGES)
    drifted = full[:100] + "SOMETHING ELSE"
    messages = [*MESSAGES, {"role": "assistant", "content": drifted}]
    assert content_of(chat(simulator, messages=messages)) == full[100:]


def test_echo_prefill_repeats_the_prefill_without_charging_it(make_simulator: MakeSim) -> None:
    sim = make_simulator(echo_prefill=True)
    full = full_answer(MESSAGES)
    prefill = "".join(TOKEN_RE.findall(full)[:30])
    messages = [*MESSAGES, {"role": "assistant", "content": prefill}]
    body = chat(sim, messages=messages, max_tokens=5).json()
    expected = "".join(TOKEN_RE.findall(full)[:35])
    assert body["choices"][0]["message"]["content"] == expected
    assert body["usage"]["completion_tokens"] == 5


def test_echo_prefill_in_a_stream_sends_the_prefill_first(make_simulator: MakeSim) -> None:
    sim = make_simulator(echo_prefill=True)
    tokens = TOKEN_RE.findall(full_answer(MESSAGES))
    prefill = "".join(tokens[:3])
    messages = [*MESSAGES, {"role": "assistant", "content": prefill}]
    reply = chat(sim, messages=messages, max_tokens=4, stream=True)
    assert reply.events()[1]["choices"][0]["delta"] == {"content": prefill}
    assert content_of(reply) == "".join(tokens[:7])


def test_reasoning_that_exhausts_the_budget_leaves_content_empty(make_simulator: MakeSim) -> None:
    sim = make_simulator(reasoning_words=50)
    body = chat(sim, max_tokens=20).json()
    message = body["choices"][0]["message"]
    assert message["content"] == ""
    assert len(message["reasoning"].split()) == 20
    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 20


def test_reasoning_streams_in_the_reasoning_field_before_content(make_simulator: MakeSim) -> None:
    sim = make_simulator(reasoning_words=12)
    chunks = [e for e in chat(sim, stream=True, max_tokens=40).events() if e != "[DONE]"]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0]["role"] == "assistant" and deltas[0]["content"] == ""
    assert deltas[0]["reasoning"]
    thinking = "".join(d.get("reasoning", "") for d in deltas)
    assert len(thinking.split()) == 12
    content = "".join(d.get("content", "") for d in deltas)
    assert content == "".join(TOKEN_RE.findall(full_answer(MESSAGES))[:28])
    reasoning_done = max(i for i, d in enumerate(deltas) if "reasoning" in d)
    assert all(not d.get("content") for d in deltas[: reasoning_done + 1])


# -- usage ---------------------------------------------------------------------------------


def test_prompt_tokens_follow_the_documented_estimate(simulator: Simulator) -> None:
    expected = sum(len(re.findall(r"\w+|[^\w\s]", m["content"])) + 4 for m in MESSAGES)
    assert chat(simulator).json()["usage"]["prompt_tokens"] == expected


def test_context_window_clips_reported_prompt_tokens(make_simulator: MakeSim) -> None:
    sim = make_simulator(context_window=10)
    usage = chat(sim).json()["usage"]
    assert usage["prompt_tokens"] == 10
    assert usage["total_tokens"] == 10 + usage["completion_tokens"]


def test_omit_usage_drops_usage_everywhere(make_simulator: MakeSim) -> None:
    sim = make_simulator(omit_usage=True)
    assert "usage" not in chat(sim).json()
    events = chat(sim, stream=True, stream_options={"include_usage": True}).events()
    assert all("usage" not in e for e in events if e != "[DONE]")
    assert events[-1] == "[DONE]"


# -- validation, auth, routes --------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"{not json", "invalid character"),
        (b'{"messages": [{"role": "user", "content": "hi"}]}', "model is required"),
        (b'{"model": "", "messages": [{"role": "user", "content": "hi"}]}', "model is required"),
        (b'{"model": "m"}', "[] is too short - 'messages'"),
        (b'{"model": "m", "messages": []}', "[] is too short - 'messages'"),
        (b'{"model": "m", "messages": [{"role": "user", "content": 42}]}', "float64"),
        (b'{"model": "m", "messages": [{"role": "user"}]}', "type: <nil>"),
        (
            b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": -1}',
            "max_tokens",
        ),
        (
            b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": "9"}',
            "max_tokens",
        ),
        (
            b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}',
            "stream",
        ),
    ],
    ids=[
        "not-json",
        "no-model",
        "empty-model",
        "no-messages",
        "empty-messages",
        "number-content",
        "null-content",
        "negative-max-tokens",
        "string-max-tokens",
        "string-stream",
    ],
)
def test_invalid_requests_get_400_in_openai_shape(
    simulator: Simulator, body: bytes, message: str
) -> None:
    reply = request(simulator, "POST", "/v1/chat/completions", body)
    assert reply.status == 400
    error = reply.json()["error"]
    assert message in error["message"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] is None and error["code"] is None
    assert simulator.requests[-1].status == 400


def test_unknown_body_fields_are_accepted_and_ignored(simulator: Simulator) -> None:
    messages = [*MESSAGES, {"role": "assistant", "content": "", "prefix": True}]
    reply = chat(simulator, messages=messages, continue_final_message=True, n=3, user="u")
    assert reply.status == 200
    assert content_of(reply) == full_answer(MESSAGES)


def test_unknown_model_gets_404_when_models_are_set(make_simulator: MakeSim) -> None:
    sim = make_simulator(models=frozenset({"deepseek-v4-flash"}))
    assert chat(sim).status == 200
    reply = chat(sim, model="llama3")
    assert reply.status == 404
    error = reply.json()["error"]
    assert error["message"] == 'model "llama3" not found, try pulling it first'
    assert error["type"] == "not_found_error"


def test_api_key_is_required_when_set(make_simulator: MakeSim) -> None:
    sim = make_simulator(api_key="sk-test")
    denied = chat(sim)
    assert denied.status == 401
    assert denied.json() == {"error": "unauthorized"}
    assert chat(sim, headers={"Authorization": "Bearer wrong"}).status == 401
    assert chat(sim, headers={"Authorization": "Bearer sk-test"}).status == 200
    assert sim.requests[-1].headers["authorization"] == "Bearer sk-test"


def test_models_endpoint_lists_configured_models(make_simulator: MakeSim) -> None:
    sim = make_simulator(models=frozenset({"b", "a"}))
    body = request(sim, "GET", "/v1/models").json()
    assert body == {
        "object": "list",
        "data": [
            {"id": "a", "object": "model", "created": 0, "owned_by": "library"},
            {"id": "b", "object": "model", "created": 0, "owned_by": "library"},
        ],
    }


def test_models_endpoint_defaults_to_deepseek_v4_flash(simulator: Simulator) -> None:
    data = request(simulator, "GET", "/v1/models").json()["data"]
    assert [m["id"] for m in data] == ["deepseek-v4-flash"]


def test_version_endpoint(simulator: Simulator) -> None:
    assert request(simulator, "GET", "/api/version").json() == {"version": "0.33.0-sim"}


def test_unknown_route_gets_openai_shaped_404(simulator: Simulator) -> None:
    reply = request(simulator, "GET", "/v1/nope")
    assert reply.status == 404
    assert reply.json()["error"]["type"] == "not_found_error"


def test_oversized_body_gets_413(make_simulator: MakeSim) -> None:
    sim = make_simulator(max_body_bytes=1000)
    reply = chat(sim, messages=[{"role": "user", "content": "x" * 5000}])
    assert reply.status == 413
    assert sim.requests[-1].status == 413


def test_chunked_request_body_is_read(simulator: Simulator) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", simulator.port, timeout=10)
    try:
        payload = json.dumps({"model": "m", "messages": MESSAGES}).encode()
        pieces = [payload[:10], payload[10:]]
        conn.request("POST", "/v1/chat/completions", body=iter(pieces), encode_chunked=True)
        resp = conn.getresponse()
        assert resp.status == 200
        assert json.loads(resp.read())["choices"][0]["message"]["content"] == full_answer(MESSAGES)
    finally:
        conn.close()
    assert simulator.requests[-1].body == payload


def test_requests_are_recorded_exactly(simulator: Simulator) -> None:
    payload = {"model": "m", "messages": MESSAGES, "max_tokens": 3}
    body = json.dumps(payload).encode()
    request(simulator, "POST", "/v1/chat/completions", body, {"X-Trace": "t1"})
    request(simulator, "GET", "/api/version")
    first, second = simulator.requests
    assert first == RecordedRequest(
        "POST", "/v1/chat/completions", first.headers, body, fault=None, status=200
    )
    assert first.headers["x-trace"] == "t1"
    assert (second.method, second.path, second.status) == ("GET", "/api/version", 200)
    assert simulator.chat_requests() == [first]


# -- faults --------------------------------------------------------------------------------


def test_fault_catalogue_is_split_into_transient_and_garbage() -> None:
    assert ALL_FAULTS == TRANSIENT_FAULTS + GARBAGE_FAULTS
    assert len(set(ALL_FAULTS)) == 17


@pytest.mark.parametrize("kind", ["500", "502", "503"])
def test_server_error_faults_use_openai_error_shape(simulator: Simulator, kind: str) -> None:
    simulator.script_faults([kind])
    reply = chat(simulator)
    assert reply.status == int(kind)
    error = reply.json()["error"]
    assert error["type"] == "api_error" and error["message"]
    assert simulator.requests[-1].fault == kind and simulator.requests[-1].status == int(kind)


def test_503_fault_says_server_busy(simulator: Simulator) -> None:
    simulator.script_faults(["503"])
    assert "maximum pending requests exceeded" in chat(simulator).json()["error"]["message"]


def test_429_fault_has_retry_after_and_native_body(make_simulator: MakeSim) -> None:
    sim = make_simulator(retry_after=2.5)
    sim.script_faults(["429"])
    reply = chat(sim)
    assert reply.status == 429
    assert reply.headers["retry-after"] == "2.5"
    assert reply.json() == {"error": "rate limit exceeded"}


def test_429_string_fault_has_no_retry_after(simulator: Simulator) -> None:
    simulator.script_faults(["429-string"])
    reply = chat(simulator)
    assert reply.status == 429
    assert "retry-after" not in reply.headers
    assert reply.json()["error"].startswith("you (sim) have reached your hourly usage limit")


def test_reset_fault_resets_the_connection(simulator: Simulator) -> None:
    simulator.script_faults(["reset"])
    with pytest.raises(ConnectionResetError):
        chat(simulator)
    assert simulator.requests[-1].fault == "reset" and simulator.requests[-1].status == 0
    assert chat(simulator).status == 200


def test_stall_fault_delays_then_answers_normally(make_simulator: MakeSim) -> None:
    sim = make_simulator(stall_seconds=0.3)
    sim.script_faults(["stall"])
    started = time.monotonic()
    reply = chat(sim)
    assert time.monotonic() - started >= 0.28
    assert content_of(reply) == full_answer(MESSAGES)
    assert sim.requests[-1].fault == "stall"


def test_malformed_fault_serves_truncated_json(simulator: Simulator) -> None:
    simulator.script_faults(["malformed"])
    reply = chat(simulator)
    assert reply.status == 200 and reply.headers["content-type"] == "application/json"
    assert reply.body.startswith(b'{"id":"chatcmpl-')
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply.body)


def test_malformed_fault_in_a_stream_serves_a_garbage_event(simulator: Simulator) -> None:
    simulator.script_faults(["malformed"])
    reply = chat(simulator, stream=True)
    assert reply.headers["content-type"] == "text/event-stream"
    assert reply.body == b'data: {"id":\n\n'


def test_cut_stream_fault_ends_without_finish_or_done(simulator: Simulator) -> None:
    simulator.script_faults(["cut-stream"])
    conn = http.client.HTTPConnection("127.0.0.1", simulator.port, timeout=10)
    try:
        payload = {"model": "m", "messages": MESSAGES, "stream": True}
        conn.request("POST", "/v1/chat/completions", json.dumps(payload))
        resp = conn.getresponse()
        assert resp.status == 200
        with pytest.raises(http.client.IncompleteRead) as caught:
            resp.read()
    finally:
        conn.close()
    received = caught.value.partial.decode()
    assert received.count("data: ") >= 2
    assert "[DONE]" not in received and '"finish_reason":"' not in received
    assert simulator.requests[-1].status == 0


def test_cut_stream_fault_without_stream_is_malformed_json(simulator: Simulator) -> None:
    simulator.script_faults(["cut-stream"])
    reply = chat(simulator)
    assert reply.status == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply.body)


def test_html_fault_serves_an_nginx_502_page(simulator: Simulator) -> None:
    simulator.script_faults(["html"])
    reply = chat(simulator)
    assert reply.status == 502
    assert reply.headers["content-type"] == "text/html"
    assert b"<h1>502 Bad Gateway</h1>" in reply.body


def test_empty_fault_serves_an_empty_200(simulator: Simulator) -> None:
    simulator.script_faults(["empty"])
    reply = chat(simulator)
    assert (reply.status, reply.body, reply.headers["content-length"]) == (200, b"", "0")


def test_no_choices_fault(simulator: Simulator) -> None:
    simulator.script_faults(["no-choices"])
    body = chat(simulator).json()
    assert body["choices"] == [] and body["object"] == "chat.completion"


def test_content_not_string_fault(simulator: Simulator) -> None:
    simulator.script_faults(["content-not-string"])
    assert chat(simulator).json()["choices"][0]["message"]["content"] == 42


def test_content_missing_fault(simulator: Simulator) -> None:
    simulator.script_faults(["content-missing"])
    assert chat(simulator).json()["choices"][0]["message"] == {"role": "assistant"}


def test_negative_usage_fault(simulator: Simulator) -> None:
    simulator.script_faults(["negative-usage"])
    body = chat(simulator).json()
    assert body["usage"]["prompt_tokens"] == -5
    assert body["choices"][0]["message"]["content"] == full_answer(MESSAGES)


def test_huge_fault_serves_about_80_mb_of_valid_json(simulator: Simulator) -> None:
    simulator.script_faults(["huge"])
    reply = chat(simulator)
    assert reply.status == 200
    assert len(reply.body) > 80 * 1024 * 1024
    assert reply.json()["choices"][0]["message"]["content"] == full_answer(MESSAGES)


def test_stream_garbage_faults_alter_the_chunks(simulator: Simulator) -> None:
    simulator.script_faults(["content-not-string"])
    events = chat(simulator, stream=True).events()
    assert events[-1] == "[DONE]"
    assert events[1]["choices"][0]["delta"]["content"] == 42


def test_scripted_faults_apply_in_order_before_normal_answers(simulator: Simulator) -> None:
    simulator.script_faults(["503", None, "429"])
    statuses = [chat(simulator).status for _ in range(4)]
    assert statuses == [503, 200, 429, 200]
    assert [r.fault for r in simulator.chat_requests()] == ["503", None, "429", None]


def test_scripted_faults_skip_requests_that_fail_validation(simulator: Simulator) -> None:
    simulator.script_faults(["500"])
    assert request(simulator, "POST", "/v1/chat/completions", b"{}").status == 400
    assert chat(simulator).status == 500


def _fault_sequence(make_simulator: MakeSim, seed: int) -> list[str | None]:
    sim = make_simulator(fault_rate=0.5, fault_seed=seed, fault_kinds=("500", "503", "429"))
    for _ in range(30):
        chat(sim)
    return [r.fault for r in sim.chat_requests()]


def test_same_fault_seed_gives_the_same_fault_sequence(make_simulator: MakeSim) -> None:
    first = _fault_sequence(make_simulator, 7)
    assert first == _fault_sequence(make_simulator, 7)
    assert first != _fault_sequence(make_simulator, 8)
    assert {f for f in first if f} == {"500", "503", "429"}
    assert None in first


def test_random_faults_are_counted_in_stats(make_simulator: MakeSim) -> None:
    sim = make_simulator(fault_rate=1.0, fault_kinds=("502",))
    for _ in range(3):
        assert chat(sim).status == 502
    stats = request(sim, "GET", "/_sim/stats").json()
    assert stats == {"chat_requests": 3, "faults": {"502": 3}}


def test_reset_clears_requests_scripted_faults_and_stats(simulator: Simulator) -> None:
    simulator.script_faults(["500", "500"])
    chat(simulator)
    simulator.reset()
    assert simulator.requests == []
    assert chat(simulator).status == 200
    assert simulator.stats() == {"chat_requests": 1, "faults": {}}


def test_unknown_fault_kinds_are_rejected() -> None:
    with pytest.raises(ValueError):
        SimulatorConfig(fault_kinds=("500", "gremlins"))
    with pytest.raises(ValueError):
        Simulator().script_faults(["gremlins"])


def test_config_knobs_can_be_flipped_between_requests(simulator: Simulator) -> None:
    simulator.config.answer_words = 10
    assert content_of(chat(simulator)) == full_answer(MESSAGES, 10)
    simulator.config.omit_usage = True
    assert "usage" not in chat(simulator).json()


# -- capacity, latency, lifecycle, command line --------------------------------------------


def test_capacity_queues_requests_beyond_it(make_simulator: MakeSim) -> None:
    sim = make_simulator(capacity=2, latency=0.2)
    statuses: list[int] = []
    lock = threading.Lock()

    def one() -> None:
        status = chat(sim).status
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=one) for _ in range(4)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    assert statuses == [200] * 4
    assert 0.38 <= elapsed < 1.5


def test_latency_spreads_across_a_stream(make_simulator: MakeSim) -> None:
    sim = make_simulator(latency=0.3)
    started = time.monotonic()
    reply = chat(sim, stream=True)
    assert time.monotonic() - started >= 0.28
    assert content_of(reply) == full_answer(MESSAGES)


def test_stop_returns_promptly_with_a_stalled_request_in_flight() -> None:
    sim = Simulator(stall_seconds=60).start()
    sim.script_faults(["stall"])
    payload = json.dumps({"model": "m", "messages": MESSAGES}).encode()
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", sim.port), timeout=10) as sock:
        sock.sendall(head.encode() + payload)
        deadline = time.monotonic() + 5
        while not sim.chat_requests() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sim.chat_requests()[0].fault == "stall"
        started = time.monotonic()
        sim.stop()
        assert time.monotonic() - started < 2.0
        try:
            leftover = sock.recv(100)
        except ConnectionResetError:
            leftover = b""
        assert leftover == b""


def test_cli_prints_its_listening_line_and_serves() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "deepseek_review.testing.simulator", "--port", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.fullmatch(
            r"deepseek-review simulator listening on http://127\.0\.0\.1:(\d+)\n", line
        )
        assert match, line
        conn = http.client.HTTPConnection("127.0.0.1", int(match.group(1)), timeout=10)
        try:
            conn.request("GET", "/api/version")
            assert json.loads(conn.getresponse().read()) == {"version": "0.33.0-sim"}
        finally:
            conn.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert err == ""


def test_cli_logs_one_line_per_request_unless_quiet() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "deepseek_review.testing.simulator",
            "--port",
            "0",
            "--fault-kinds",
            "500",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        port = int(proc.stdout.readline().rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", "/api/version")
            conn.getresponse().read()
        finally:
            conn.close()
        assert proc.stderr.readline().startswith("GET /api/version 200")
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_cli_rejects_unknown_fault_kinds() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "deepseek_review.testing.simulator",
            "--fault-kinds",
            "500,gremlins",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "gremlins" in proc.stderr
