"""Every token accounted for: what servers report beyond the receipt's three counts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepseek_review.testing.simulator import Simulator
from tests.support.cli import review

MakeSim = Callable[..., Simulator]


def records(repo: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((repo / "reviews").glob("*.request.json"))]


def test_reasoning_and_cache_counts_go_into_the_request_record(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(usage_details=True, reasoning_words=12)
    r = review(cli, sim)
    assert r.code == 0, r.err
    [record] = records(repo)
    details = record["response"]["usage_details"]
    prompt = record["response"]["usage"]["prompt_tokens"]
    assert details == {
        "reasoning_tokens": 12,
        "prompt_cache_hit_tokens": prompt // 2,
        "prompt_cache_miss_tokens": prompt - prompt // 2,
    }
    assert cli("verify", "reviews").code == 0


def test_openai_style_cached_tokens_are_read_as_hits_and_the_rest_as_misses() -> None:
    from deepseek_review.chat.wire import usage_details

    raw = {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 64}}
    assert usage_details(raw) == {"prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36}


def test_malformed_extra_counts_are_left_out_not_trusted() -> None:
    from deepseek_review.chat.wire import usage_details

    raw = {"prompt_tokens": 10, "prompt_cache_hit_tokens": -3, "prompt_cache_miss_tokens": True}
    assert usage_details(raw) == {}


def test_a_server_reporting_only_three_counts_writes_no_details(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator()
    assert review(cli, sim).code == 0
    assert "usage_details" not in records(repo)[0]["response"]


def test_stats_shows_reasoning_cache_hit_share_and_tokens_per_second(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(usage_details=True, reasoning_words=8)
    assert review(cli, sim, "--topic", "a").code == 0
    assert review(cli, sim, "--topic", "b").code == 0
    total = cli("stats", "--json").json()["total"]
    assert total["reasoning_tokens"] == 16
    hits, misses = total["prompt_cache_hit_tokens"], total["prompt_cache_miss_tokens"]
    assert hits > 0 and total["cache_hit_share"] == round(hits / (hits + misses), 4)
    assert total["tokens_per_second"] > 0


def test_stats_says_null_where_no_server_reported_cache_use(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator()
    assert review(cli, sim).code == 0
    total = cli("stats", "--json").json()["total"]
    assert total["cache_hit_share"] is None and total["reasoning_tokens"] == 0


def test_stats_says_null_not_0_for_cache_hits_and_misses_no_server_reported(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator()  # as Ollama and llama-cpp-python: no cache counts
    assert review(cli, sim).code == 0
    total = cli("stats", "--json").json()["total"]
    assert total["prompt_cache_hit_tokens"] is None
    assert total["prompt_cache_miss_tokens"] is None
    assert "prompt-cache hits: unknown" in cli("stats").err


def test_stats_says_how_many_segments_left_their_cache_hits_out_of_the_sum(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    assert review(cli, make_simulator(usage_details=True), "--topic", "a").code == 0
    assert review(cli, make_simulator(), "--topic", "b").code == 0
    total = cli("stats", "--json").json()["total"]
    [reported] = [r for r in records(repo) if "usage_details" in r["response"]]
    details = reported["response"]["usage_details"]
    assert total["prompt_cache_hit_tokens"] == details["prompt_cache_hit_tokens"]
    assert total["prompt_cache_miss_tokens"] == details["prompt_cache_miss_tokens"]
    assert total["segments_without_cache_report"] == 1
