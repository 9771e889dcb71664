"""``--api ollama``: Ollama's /api/chat with num_ctx sized to the request, end to end."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator
from deepseek_review.testing.simulator.answer import prompt_token_estimate
from tests.support.prompt import big_spec, run_big

MakeSim = Callable[..., Simulator]


def test_native_api_keeps_the_whole_prompt_the_openai_endpoint_would_clip(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    big_spec(repo)
    sim = make_simulator(context_window=2048)  # the server's runtime context: 2048
    clipped = run_big(cli, sim, "--topic", "openai")
    assert clipped.code == 7  # kept the end only, caught after paying for it
    assert "kept only 2048 prompt tokens" in clipped.err
    kept = run_big(cli, sim, "--api", "ollama", "--topic", "native")
    assert kept.code == 0, kept.err
    [request] = [r for r in sim.chat_requests() if r.path == "/api/chat"]
    body = json.loads(request.body)
    assert body["options"] == {"num_ctx": 16384, "num_predict": 8192, "temperature": 0.0}
    [segment] = kept.json()["segments"]
    assert segment["usage"]["prompt_tokens"] == prompt_token_estimate(body["messages"]) > 2048


def test_native_receipt_names_the_url_called_and_verifies(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(answer_words=60)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url, "--api",
            "ollama", "--json")  # fmt: skip
    assert r.code == 0, r.err
    [receipt] = (repo / "reviews").glob("*.receipt.json")
    assert json.loads(receipt.read_text())["endpoint"] == sim.base_url + "/api/chat"
    v = cli("verify", "reviews")
    assert v.code == 0, v.out + v.err


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_native_cut_off_answer_is_continued_by_prefill_and_stitched(
    repo: Path, make_simulator: MakeSim, cli: Any, stream: str
) -> None:
    from deepseek_review.testing.simulator import full_answer

    sim = make_simulator(answer_words=120)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url, "--api",
            "ollama", "--max-tokens", "40", "--json", stream)  # fmt: skip
    assert r.code == 0, r.err
    segments = r.json()["segments"]
    assert len(segments) > 1
    assert all(json.loads(q.body)["messages"][-1]["role"] == "assistant"
               for q in sim.chat_requests()[1:])  # fmt: skip
    first = json.loads(sim.chat_requests()[0].body)
    text = "".join((repo / s["answer_path"]).read_text() for s in segments)
    assert full_answer(first["messages"], 120) in text or text.startswith(
        full_answer(first["messages"], 120)[:200]
    )
    assert cli("verify", "reviews").code == 0


def test_native_usage_and_durations_go_into_the_record(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(reasoning_words=6)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url, "--api",
            "ollama", "--json")  # fmt: skip
    assert r.code == 0, r.err
    [record] = (repo / "reviews").glob("*.request.json")
    response = json.loads(record.read_text())["response"]
    details = response["usage_details"]
    assert details["load_duration"] > 0 and details["eval_duration"] > 0
    assert response["usage"]["completion_tokens"] > 6
    assert "reasoning" in response["message_keys"]


def test_native_reasoning_none_sends_think_false(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(reasoning_words=6)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url, "--api",
            "ollama", "--reasoning", "none")  # fmt: skip
    assert r.code == 0, r.err
    assert json.loads(sim.chat_requests()[0].body)["think"] is False


def test_native_prompt_over_the_trained_context_is_refused_before_sending(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    big_spec(repo)
    sim = make_simulator(model_context_length=8192)
    r = run_big(cli, sim, "--api", "ollama")
    assert r.code == 14
    assert "trained context" in r.err and sim.chat_requests() == []


def test_continue_and_show_work_on_a_native_chain(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(answer_words=120)
    first = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url, "--api",
                "ollama", "--max-tokens", "30", "--max-continuations", "0", "--json")  # fmt: skip
    assert first.code == 4, first.err
    answer = first.json()["segments"][0]["answer_path"]
    more = cli("continue", answer, "--endpoint", sim.base_url, "--json")
    assert more.code == 0, more.err
    assert sim.chat_requests()[-1].path == "/api/chat"
    assert json.loads(sim.chat_requests()[-1].body)["messages"][-1]["role"] == "assistant"
    assert cli("show", answer).code == 0
    assert cli("verify", "reviews").code == 0


def test_a_native_batch_resumes_without_sending_again(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    from tests.support.batch import batch, manifest

    sim = make_simulator(answer_words=30)
    manifest(repo, ["a", "b"])
    first = batch(cli, sim, "--api", "ollama")
    assert first.code == 0, first.err
    sent = len(sim.chat_requests())
    again = batch(cli, sim, "--api", "ollama")
    assert again.code == 0, again.err
    assert len(sim.chat_requests()) == sent
    assert {e["status"] for e in again.json()["entries"]} <= {"ok", "skipped", "done", "adopted"}


def test_native_api_with_another_server_kind_is_refused(repo: Path, cli: Any) -> None:
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--api", "ollama", "--server", "vllm")
    assert r.code == 2
    assert "--api ollama is Ollama's own API, but --server is vllm" in r.err
