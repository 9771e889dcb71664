"""An answer whose length is an exact multiple of the cap: the last reply is empty.

A real model cut at the cap has not yet sent its end, so the next request gets nothing and
``stop``. llama-cpp-python streams that as a first stream_chunk holding the role alone, then
``delta: {}`` with the finish reason, then ``[DONE]``; ``role`` is not a message body, so
that is an empty answer, which ends the chain. A chain's *first* answer with no text is no
review, though, and stays refused (retried, then exit 6).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.chat import wire as chatwire
from deepseek_review.testing.simulator import Simulator, full_answer
from tests.support.chat import (
    MESSAGES,
    answers,
    chat,
    primary_messages,
    read_stream,
    refused,
    stream_chunk,
)
from tests.support.cli import CliResult, review

Cli = Callable[..., CliResult]
MakeSim = Callable[..., Simulator]

#: The answer's length in tokens (the simulator's tokens are its words).
WORDS = 27
STREAMS = ["--stream", "--no-stream"]


def _llama_cpp_python(make_simulator: MakeSim, **more: Any) -> Simulator:
    return make_simulator(answer_words=WORDS, role_chunk=True, end_token=True, **more)


# --------------------------------------------------------------------------- the simulator


def test_simulator_role_chunk_sends_the_role_alone_first(make_simulator: MakeSim) -> None:
    sim = _llama_cpp_python(make_simulator)
    events = chat(sim, stream=True).events()
    deltas = [e["choices"][0]["delta"] for e in events[:-1] if e["choices"]]
    assert deltas[0] == {"role": "assistant"}
    assert all(set(d) == {"content"} for d in deltas[1:-1])
    assert "".join(d.get("content", "") for d in deltas) == full_answer(MESSAGES, WORDS)


def test_simulator_role_chunk_stream_of_an_empty_answer_is_role_then_finish(
    make_simulator: MakeSim,
) -> None:
    sim = _llama_cpp_python(make_simulator)
    messages = [*MESSAGES, {"role": "assistant", "content": full_answer(MESSAGES, WORDS)}]
    events = chat(sim, messages=messages, stream=True).events()
    assert [e["choices"] for e in events[:-1] if e["choices"]] == [
        [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}],
        [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    ]
    assert events[-1] == "[DONE]"


# --------------------------------------------------------------------------- the wire


def test_a_role_only_chunk_then_the_finish_is_an_empty_answer() -> None:
    st = read_stream(
        [stream_chunk({"role": "assistant"}), stream_chunk({}, "stop"), b"data: [DONE]"]
    )
    chatwire.check_ended(st)
    done = chatwire.stream_completion(st, 0.0)
    assert (done.content, done.finish_reason, done.message_keys) == ("", "stop", ("role",))


@pytest.mark.parametrize("field", ["text", "tool_calls", "function_call"])
def test_deltas_holding_a_message_in_a_shape_we_cannot_read_are_refused(field: str) -> None:
    st = read_stream(
        [stream_chunk({"role": "assistant", field: "x"}), stream_chunk({}, "stop"), b"data: [DONE]"]
    )
    with pytest.raises(ValueError, match=f"no message content .*only {field}"):
        chatwire.stream_completion(st, 0.0)


# --------------------------------------------------------------------------- a chain


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("cap", [1, 3, 9, WORDS])
def test_an_answer_an_exact_multiple_of_the_cap_ends_with_an_empty_segment(
    repo: Path, make_simulator: MakeSim, cli: Cli, cap: int, stream: str
) -> None:
    sim = _llama_cpp_python(make_simulator)
    r = review(cli, sim, stream, "--max-tokens", str(cap), "--max-continuations", "40")
    assert r.code == 0, r.err
    segments = r.json()["segments"]
    assert [s["finish_reason"] for s in segments] == ["length"] * (WORDS // cap) + ["stop"]
    assert [s["attempts"] for s in segments] == [1] * len(segments)
    assert len(sim.chat_requests()) == len(segments)
    assert answers(repo, r)[-1] == ""
    assert "".join(answers(repo, r)) == full_answer(primary_messages(sim), WORDS)
    v = cli("verify", "--strict")
    assert v.code == 0, v.out + v.err


@pytest.mark.parametrize("stream", STREAMS)
def test_continue_on_a_chain_cut_at_an_exact_multiple_ends_it_empty(
    repo: Path, make_simulator: MakeSim, cli: Cli, stream: str
) -> None:
    sim = _llama_cpp_python(make_simulator)
    first = review(cli, sim, stream, "--max-tokens", str(WORDS), "--max-continuations", "0")
    assert first.code == 4, first.err
    answer = first.json()["segments"][0]["answer_path"]
    more = cli("continue", answer, "--endpoint", sim.base_url, stream, "--json")
    assert more.code == 0, more.err
    assert more.json()["finish_reason"] == "stop"
    assert len(sim.chat_requests()) == 2
    shown = cli("show", answer)
    assert shown.out == full_answer(primary_messages(sim), WORDS)
    v = cli("verify", "--strict")
    assert v.code == 0, v.out + v.err


# --------------------------------------------------------------------------- a first answer


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize(
    "framing",
    [{"role_chunk": True}, {"llama_stream": True}, {"legacy_stream": True}, {}],
    ids=["llama-cpp-python", "llama.cpp", "ollama-legacy", "ollama"],
)
def test_a_first_answer_with_no_text_is_refused_and_nothing_written(
    repo: Path, make_simulator: MakeSim, cli: Cli, stream: str, framing: dict[str, bool]
) -> None:
    sim = make_simulator(fault_rate=1.0, fault_kinds=("blank-answer",), **framing)
    r = review(cli, sim, stream, "--max-attempts", "2")
    refused(r, 6, "carried no message content (finish_reason stop)", "after 2 attempts")
    assert len(sim.chat_requests()) == 2
    assert not (repo / "reviews").exists()


@pytest.mark.parametrize("stream", STREAMS)
def test_a_first_native_answer_with_no_text_is_refused(
    repo: Path, make_simulator: MakeSim, cli: Cli, stream: str
) -> None:
    sim = make_simulator(fault_rate=1.0, fault_kinds=("blank-answer",))
    r = review(cli, sim, stream, "--api", "ollama", "--max-attempts", "1")
    refused(r, 6, "carried no message content")
    assert [q.path for q in sim.chat_requests()] == ["/api/chat"]
    assert not (repo / "reviews").exists()


def test_a_blank_first_answer_once_is_retried_to_a_review(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = _llama_cpp_python(make_simulator)
    sim.script_faults(["blank-answer"])
    r = review(cli, sim)
    assert r.code == 0, r.err
    assert r.json()["segments"][0]["attempts"] == 2
    assert json.loads(sim.chat_requests()[1].body)["messages"][-1]["role"] == "user"
