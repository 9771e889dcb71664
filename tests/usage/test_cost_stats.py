"""`stats` per model and server: prompt, cached, answer and reasoning tokens, and money."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepseek_review.ollama.pricing import Price, bundled, shown_price_of
from deepseek_review.testing.simulator import Simulator
from tests.support.cli import review

MakeSim = Callable[..., Simulator]
MODEL = "deepseek-v4-flash"
DEEPSEEK = "https://api.deepseek.com/v1/chat/completions"


def two_questions(cli: Any, sim: Simulator) -> None:
    assert review(cli, sim, "--topic", "one", prompt="Is the mean right?").code == 0
    assert review(cli, sim, "--topic", "two", prompt="Is it clear?").code == 0


def server_of(sim: Simulator) -> str:
    return f"127.0.0.1:{sim.port}"


def test_stats_counts_cached_prompt_tokens_per_model_and_server(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(prompt_cache="llama.cpp")
    two_questions(cli, sim)
    data = cli("stats", "--json").json()
    [row] = data["by_model_server"]
    assert (row["model"], row["server"]) == (MODEL, server_of(sim))
    records = [json.loads(p.read_text()) for p in (repo / "reviews").glob("*.request.json")]
    hits = sum(r["response"]["usage_details"]["prompt_cache_hit_tokens"] for r in records)
    assert row["cached_prompt_tokens"] == hits > 0
    assert row["segments_without_cache_report"] == 0
    assert data["by_server"][server_of(sim)]["prompt_tokens"] == row["prompt_tokens"]


def test_stats_counts_reasoning_tokens_per_model_and_server(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(usage_details=True, reasoning_words=5)
    two_questions(cli, sim)
    [row] = cli("stats", "--json").json()["by_model_server"]
    assert row["server"] == server_of(sim) and row["reasoning_tokens"] == 10


def test_cached_tokens_are_unknown_where_the_server_reports_none(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator()  # as Ollama
    two_questions(cli, sim)
    r = cli("stats")
    total = cli("stats", "--json").json()["total"]
    assert total["cached_prompt_tokens"] is None
    assert total["segments_without_cache_report"] == 2
    header = r.out.splitlines().index(next(x for x in r.out.splitlines() if "cached" in x))
    row = r.out.splitlines()[header + 1].split()
    assert row[:2] == [MODEL, server_of(sim)] and row[3] == "unknown"


def test_the_server_table_shows_cached_tokens_and_cost(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(prompt_cache="deepseek")
    two_questions(cli, sim)
    (repo / ".deepseek-review.toml").write_text(
        f'[prices."{MODEL}"]\ninput = 2.0\ncache_hit = 0.5\noutput = 8.0\n', encoding="utf-8"
    )
    total = cli("stats", "--json").json()["total"]
    lines = cli("stats").out.splitlines()
    assert lines[-1].split() == [
        "total",
        str(total["prompt_tokens"]),
        str(total["cached_prompt_tokens"]),
        str(total["completion_tokens"]),
        "0",
        f"{total['cost']:.4f}",
    ]


def test_a_mix_of_servers_that_report_and_do_not_marks_the_cached_sum_partial(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    two_questions(cli, make_simulator(prompt_cache="openai"))
    assert review(cli, make_simulator(), "--topic", "three").code == 0
    total_row = cli("stats").out.splitlines()[-1].split()
    assert total_row[2].endswith("+?")


def test_deepseeks_api_is_priced_from_the_bundled_list_with_its_date() -> None:
    listed = bundled()
    assert listed.checked and listed.source.startswith("https://api-docs.deepseek.com/")
    price = shown_price_of({}, "deepseek-flash", DEEPSEEK)
    assert price is not None and price.cache_hit < price.input < price.output


def test_the_prices_setting_wins_over_the_bundled_list() -> None:
    mine = Price(input=1.0, output=2.0, cache_hit=0.1)
    assert shown_price_of({"deepseek-flash": mine}, "deepseek-flash", DEEPSEEK) == mine


def test_the_bundled_list_prices_only_deepseeks_own_api() -> None:
    ollama = "http://127.0.0.1:11434/v1/chat/completions"
    assert shown_price_of({}, "deepseek-flash", ollama) is None


def test_a_dry_run_against_deepseeks_api_is_priced_from_the_bundled_list(
    repo: Path, cli: Any
) -> None:
    # --server deepseek: a dry run asks that server nothing (no test reaches the internet)
    r = cli("run", "--dry-run", "--json", "-c", "docs/spec.md", "-p", "x",
            "--endpoint", "https://api.deepseek.com", "--model", "deepseek-flash",
            "--server", "deepseek")  # fmt: skip
    assert r.code == 0, r.err
    info = r.json()
    price = bundled().prices["deepseek-flash@api.deepseek.com"]
    assert info["cost_estimate"] == round(price.cost(info["token_estimate"], 8192), 6)
