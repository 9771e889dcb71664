"""Prompt-cache hits read from every kind of server into the request record (never invented)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.chat.wire import cache_details
from deepseek_review.testing.simulator import Simulator
from tests.support.cli import review

MakeSim = Callable[..., Simulator]


def last_record(repo: Path) -> dict[str, Any]:
    paths = sorted((repo / "reviews").glob("*.request.json"), key=lambda p: p.stat().st_mtime_ns)
    record: dict[str, Any] = json.loads(paths[-1].read_text())
    return record


@pytest.mark.parametrize("kind", ["deepseek", "openai", "llama.cpp"])
@pytest.mark.parametrize("stream", [True, False])
def test_a_second_question_about_the_same_files_records_the_servers_cache_hits(
    kind, stream, repo, make_simulator, cli
):
    sim = make_simulator(prompt_cache=kind)
    more = () if stream else ("--no-stream",)
    assert review(cli, sim, "--topic", "one", *more, prompt="Is the mean right?").code == 0
    assert review(cli, sim, "--topic", "two", *more, prompt="Is it clear?").code == 0
    response = last_record(repo)["response"]
    details, prompt = response["usage_details"], response["usage"]["prompt_tokens"]
    assert details["prompt_cache_hit_tokens"] + details["prompt_cache_miss_tokens"] == prompt
    assert details["prompt_cache_hit_tokens"] > 0
    assert cli("verify", "reviews").code == 0


def test_a_server_that_reports_no_cache_use_gets_no_cache_counts(repo, make_simulator, cli):
    sim = make_simulator()  # as Ollama: nothing about its cache
    review(cli, sim, "--topic", "one")
    review(cli, sim, "--topic", "two")
    assert "usage_details" not in last_record(repo)["response"]


def test_llama_cpp_timings_give_hits_and_misses():
    timings = {"cache_n": 900, "prompt_n": 100, "prompt_ms": 12.5}
    assert cache_details({"prompt_tokens": 1000}, timings) == {
        "prompt_cache_hit_tokens": 900,
        "prompt_cache_miss_tokens": 100,
    }


def test_usage_cached_tokens_win_over_timings():
    usage = {"prompt_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 640}}
    details = cache_details(usage, {"cache_n": 900, "prompt_n": 100})
    assert details == {"prompt_cache_hit_tokens": 640, "prompt_cache_miss_tokens": 360}


@pytest.mark.parametrize(
    "timings", [{"cache_n": 900}, {"prompt_n": 100}, {"cache_n": -1, "prompt_n": 3}, [1, 2]]
)
def test_timings_without_both_counts_give_no_cache_counts(timings):
    assert cache_details({"prompt_tokens": 1000}, timings) == {}
