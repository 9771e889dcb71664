"""The simulator's native Ollama API (/api/show, /api/ps, /api/chat), pinned over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from deepseek_review.testing.simulator import Simulator, full_answer

MakeSim = Callable[..., Simulator]
MESSAGES = [{"role": "user", "content": "Review this: " + "word " * 300}]


def post(sim: Simulator, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(sim.base_url + path, json=body, timeout=10)


def ndjson(resp: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in resp.text.splitlines()]


def test_show_reports_the_trained_context_and_capabilities(make_simulator: MakeSim) -> None:
    sim = make_simulator(model_context_length=32768, reasoning_words=5)
    body = post(sim, "/api/show", {"model": "qwen3:8b"}).json()
    arch = body["model_info"]["general.architecture"]
    assert body["model_info"][f"{arch}.context_length"] == 32768
    assert body["capabilities"] == ["completion", "thinking"]


def test_show_of_a_model_not_pulled_is_a_native_404(make_simulator: MakeSim) -> None:
    sim = make_simulator(models=frozenset({"a"}))
    resp = post(sim, "/api/show", {"model": "b"})
    assert resp.status_code == 404
    assert resp.json() == {"error": "model 'b' not found"}


def test_ps_lists_a_model_once_a_chat_loaded_it_with_its_context(make_simulator: MakeSim) -> None:
    sim = make_simulator(context_window=4096)
    assert httpx.get(sim.base_url + "/api/ps").json() == {"models": []}
    post(sim, "/v1/chat/completions", {"model": "m", "messages": MESSAGES})
    [entry] = httpx.get(sim.base_url + "/api/ps").json()["models"]
    assert (entry["name"], entry["context_length"]) == ("m", 4096)


def test_preloaded_models_are_listed_before_any_chat(make_simulator: MakeSim) -> None:
    sim = make_simulator(context_window=2048, preloaded=True, models=frozenset({"m"}))
    [entry] = httpx.get(sim.base_url + "/api/ps").json()["models"]
    assert entry["context_length"] == 2048


def test_native_chat_streams_ndjson_ending_with_counts_and_durations(
    make_simulator: MakeSim,
) -> None:
    sim = make_simulator(answer_words=40)
    resp = post(sim, "/api/chat", {"model": "m", "messages": MESSAGES})  # stream by default
    assert resp.headers["content-type"] == "application/x-ndjson"
    lines = ndjson(resp)
    assert all(line["done"] is False for line in lines[:-1])
    last = lines[-1]
    assert last["done"] is True and last["done_reason"] == "stop"
    text = "".join(line["message"]["content"] for line in lines)
    assert text == full_answer(MESSAGES, 40)
    assert last["eval_count"] > 0 and last["prompt_eval_count"] > 300
    assert last["load_duration"] > 0 and last["eval_duration"] > 0


def test_native_chat_clips_the_prompt_at_num_ctx_like_ollama(make_simulator: MakeSim) -> None:
    sim = make_simulator()
    body = {"model": "m", "messages": MESSAGES, "stream": False, "options": {"num_ctx": 100}}
    assert post(sim, "/api/chat", body).json()["prompt_eval_count"] == 100
    body["options"] = {"num_ctx": 8192}
    assert post(sim, "/api/chat", body).json()["prompt_eval_count"] > 300
    [entry] = httpx.get(sim.base_url + "/api/ps").json()["models"]
    assert entry["context_length"] == 8192  # the model now runs with the last num_ctx


def test_native_chat_num_predict_cuts_with_done_reason_length(make_simulator: MakeSim) -> None:
    sim = make_simulator(answer_words=200)
    body = {"model": "m", "messages": MESSAGES, "stream": False, "options": {"num_predict": 5}}
    reply = post(sim, "/api/chat", body).json()
    assert (reply["done_reason"], reply["eval_count"]) == ("length", 5)


def test_native_think_on_a_model_without_thinking_is_refused(make_simulator: MakeSim) -> None:
    sim = make_simulator()
    resp = post(sim, "/api/chat", {"model": "m", "messages": MESSAGES, "think": True})
    assert resp.status_code == 400
    assert resp.json() == {"error": '"m" does not support thinking'}
    assert sim.chat_requests()[0].status == 400


def test_native_think_false_turns_a_thinking_models_reasoning_off(make_simulator: MakeSim) -> None:
    sim = make_simulator(reasoning_words=20)
    base = {"model": "m", "messages": MESSAGES, "stream": False}
    assert post(sim, "/api/chat", base).json()["message"]["thinking"]
    assert "thinking" not in post(sim, "/api/chat", {**base, "think": False}).json()["message"]


def test_openai_reasoning_effort_on_a_model_without_thinking_is_refused(
    make_simulator: MakeSim,
) -> None:
    sim = make_simulator()
    body = {"model": "m", "messages": MESSAGES, "reasoning_effort": "high"}
    resp = post(sim, "/v1/chat/completions", body)
    assert resp.status_code == 400
    assert resp.json()["error"]["message"] == '"m" does not support thinking'
    body["reasoning_effort"] = "none"
    assert post(sim, "/v1/chat/completions", body).status_code == 200
