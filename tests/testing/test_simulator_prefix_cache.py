"""The simulator's prefix cache: what each kind of server reports about prompt-cache hits."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from deepseek_review.testing.simulator import Simulator

MakeSim = Callable[..., Simulator]
FILES = "## File 1 of 1: a.py\n\n```python\n" + "x = 1\n" * 300 + "```\n"


def ask(sim: Simulator, question: str, *, stream: bool = False) -> dict[str, Any]:
    """The reply's ``usage`` and ``timings`` (a stream's last chunk's)."""
    body: dict[str, Any] = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Review the files."},
            {"role": "user", "content": FILES + question},
        ],
    }
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    r = httpx.post(sim.chat_url, json=body, timeout=10)
    r.raise_for_status()
    if not stream:
        data: dict[str, Any] = r.json()
        return data
    chunks = [json.loads(x[6:]) for x in r.text.splitlines() if x.startswith("data: {")]
    return {"usage": chunks[-1]["usage"], "timings": chunks[-1].get("timings")}


def test_deepseek_style_reports_the_shared_prefix_as_hits_in_units_of_64(make_simulator):
    sim = make_simulator(prompt_cache="deepseek")
    first = ask(sim, "Is x right?")["usage"]
    second = ask(sim, "Are the names clear?")["usage"]
    assert first["prompt_cache_hit_tokens"] == 0
    assert first["prompt_cache_miss_tokens"] == first["prompt_tokens"]
    hit = second["prompt_cache_hit_tokens"]
    assert hit % 64 == 0 and hit >= 0.9 * second["prompt_tokens"] - 64
    assert hit + second["prompt_cache_miss_tokens"] == second["prompt_tokens"]


def test_openai_style_reports_cached_tokens_in_prompt_tokens_details(make_simulator):
    sim = make_simulator(prompt_cache="openai")
    ask(sim, "Is x right?")
    usage = ask(sim, "Are the names clear?", stream=True)["usage"]
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    assert 0.9 * usage["prompt_tokens"] < cached < usage["prompt_tokens"]


@pytest.mark.parametrize("stream", [False, True])
def test_llama_cpp_style_reports_timings_cache_n_and_prompt_n(make_simulator, stream):
    sim = make_simulator(prompt_cache="llama.cpp")
    ask(sim, "Is x right?", stream=stream)
    reply = ask(sim, "Are the names clear?", stream=stream)
    timings, usage = reply["timings"], reply["usage"]
    assert timings["cache_n"] + timings["prompt_n"] == usage["prompt_tokens"]
    assert timings["cache_n"] > 0.9 * usage["prompt_tokens"]
    assert "prompt_tokens_details" not in usage


def test_the_same_prompt_again_still_evaluates_its_last_token(make_simulator):
    sim = make_simulator(prompt_cache="llama.cpp")
    ask(sim, "Same?")
    timings = ask(sim, "Same?")["timings"]
    assert timings["prompt_n"] == 1


def test_without_a_prompt_cache_nothing_about_the_cache_is_reported(make_simulator):
    sim = make_simulator()
    ask(sim, "Is x right?")
    reply = ask(sim, "Is x right?")
    assert "timings" not in reply
    assert set(reply["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


def test_reset_forgets_the_cached_prompts(make_simulator):
    sim = make_simulator(prompt_cache="deepseek")
    ask(sim, "Is x right?")
    sim.reset()
    assert ask(sim, "Is x right?")["usage"]["prompt_cache_hit_tokens"] == 0


def test_an_unknown_prompt_cache_kind_is_refused():
    with pytest.raises(ValueError, match="prompt_cache must be one of"):
        Simulator(prompt_cache="redis")
