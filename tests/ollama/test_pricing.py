"""Costs in ``stats`` from the ``prices`` table (per model, or model@host), cache hits priced."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator
from tests.support.cli import review

MakeSim = Callable[..., Simulator]
MODEL = "deepseek-v4-flash"


def prices(repo: Path, table: str) -> None:
    (repo / ".deepseek-review.toml").write_text(table, encoding="utf-8")


def usage(repo: Path) -> tuple[int, int, int]:
    [record] = [json.loads(p.read_text()) for p in (repo / "reviews").glob("*.request.json")]
    u, d = record["response"]["usage"], record["response"].get("usage_details", {})
    return u["prompt_tokens"], u["completion_tokens"], d.get("prompt_cache_hit_tokens", 0)


def test_stats_prices_cache_hits_at_their_own_price(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(usage_details=True)
    assert review(cli, sim).code == 0
    prices(repo, f'[prices."{MODEL}"]\ninput = 2.0\ncache_hit = 0.5\noutput = 8.0\n')
    prompt, completion, hit = usage(repo)
    total = cli("stats", "--json").json()["total"]
    expected = ((prompt - hit) * 2.0 + hit * 0.5 + completion * 8.0) / 1e6
    assert hit > 0 and total["cost"] == round(expected, 6)
    assert total["segments_without_price"] == 0


def test_an_endpoints_own_price_wins_over_the_models(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator()
    assert review(cli, sim).code == 0
    host = sim.base_url.split("//", 1)[1]
    prices(repo, f'[prices."{MODEL}"]\ninput = 100.0\noutput = 100.0\n'
                 f'[prices."{MODEL}@{host}"]\ninput = 0.0\noutput = 0.0\n')  # fmt: skip
    assert cli("stats", "--json").json()["total"]["cost"] == 0.0


def test_without_a_price_the_cost_is_null_and_the_segments_are_counted(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator()
    assert review(cli, sim).code == 0
    total = cli("stats", "--json").json()["total"]
    assert total["cost"] is None and total["segments_without_price"] == 1


def test_a_price_that_is_not_a_number_is_refused_naming_its_entry(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    prices(repo, f'[prices."{MODEL}"]\ninput = "cheap"\noutput = 1\n')
    r = cli("stats", "--json")
    assert r.code == 2
    assert f"prices['{MODEL}'].input must be a price of 0 or more" in r.err


def test_dry_run_estimates_the_cost_at_most(repo: Path, cli: Any) -> None:
    prices(repo, f'[prices."{MODEL}"]\ninput = 1.0\noutput = 10.0\n')
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--dry-run", "--json")
    assert r.code == 0, r.err
    info = r.json()
    assert info["cost_estimate"] == round((info["token_estimate"] + 8192 * 10.0) / 1e6, 6)
    text = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--dry-run")
    assert "cost           at most 0.08" in text.out


def test_dry_run_without_a_price_shows_no_cost(repo: Path, cli: Any) -> None:
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--dry-run", "--json")
    assert r.json()["cost_estimate"] is None


def test_stats_table_shows_cost_cache_share_and_speed(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(usage_details=True, reasoning_words=4)
    assert review(cli, sim).code == 0
    prices(repo, f'[prices."{MODEL}"]\ninput = 2.0\noutput = 8.0\n')
    err = cli("stats").err
    assert "reasoning tokens: 4" in err
    assert "prompt-cache hits: 49." in err or "prompt-cache hits: 50.0%" in err
    assert "completion tokens per second" in err and "cost: 0.00" in err


# --------------------------------------------------------------------------- batch --max-cost


def statuses(r: Any) -> dict[str, str]:
    return {e["topic"]: e["status"] for e in r.json()["entries"]}


def operator_prices(monkeypatch: pytest.MonkeyPatch, table: dict[str, Any]) -> None:
    monkeypatch.setenv("DEEPSEEK_REVIEW_PRICES", json.dumps(table))


def test_max_cost_stops_starting_reviews_and_the_report_says_what_was_spent(
    repo: Path, simulator: Simulator, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.batch import batch, manifest

    operator_prices(monkeypatch, {MODEL: {"input": 1.0, "output": 1.0}})
    manifest(repo, ["a", "b", "c"])
    r = batch(cli, simulator, "--jobs", "1", "--max-cost", "0.000001")
    assert r.code == 11
    assert statuses(r) == {"a": "ok", "b": "pending", "c": "pending"}
    report = r.json()
    assert report["stopped"] == "cost"
    assert report["cost"] == round(report["entries"][0]["usage"]["total_tokens"] / 1e6, 6)
    assert "cost limit reached" in r.err
    assert report["entries"][1]["error"] == "not started: --max-cost reached"
    assert len(simulator.chat_requests()) == 1


def test_max_cost_without_a_price_for_a_model_is_refused_before_sending(
    repo: Path, simulator: Simulator, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.batch import batch, manifest

    operator_prices(monkeypatch, {"other-model": {"input": 1.0, "output": 1.0}})
    manifest(repo, ["a"])
    r = batch(cli, simulator, "--max-cost", "5")
    assert r.code == 2
    assert f"--max-cost needs a price for {MODEL}" in r.err
    assert simulator.chat_requests() == []


def test_a_batch_report_without_prices_has_a_null_cost(
    repo: Path, simulator: Simulator, cli: Any
) -> None:
    from tests.support.batch import batch, manifest

    manifest(repo, ["a"])
    r = batch(cli, simulator)
    assert r.code == 0, r.err
    assert r.json()["cost"] is None


def test_max_cost_does_not_count_in_prices_from_the_repositorys_config(
    repo: Path, simulator: Simulator, cli: Any
) -> None:
    from tests.support.batch import batch, manifest

    prices(repo, f'[prices."{MODEL}"]\ninput = 0.0\noutput = 0.0\n')  # a cap never reached
    manifest(repo, ["a"])
    r = batch(cli, simulator, "--max-cost", "5")
    assert r.code == 2
    assert "--max-cost counts only in prices the operator sets (DEEPSEEK_REVIEW_PRICES)" in r.err
    assert simulator.chat_requests() == []


def test_the_batch_report_counts_reasoning_and_cache_tokens(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    from tests.support.batch import batch, manifest

    sim = make_simulator(usage_details=True, reasoning_words=3, answer_words=20)
    manifest(repo, ["a", "b"])
    r = batch(cli, sim)
    assert r.code == 0, r.err
    report = r.json()
    prompts = sum(e["usage"]["prompt_tokens"] for e in report["entries"])
    assert report["reasoning_tokens"] == 6
    hits, misses = report["prompt_cache_hit_tokens"], report["prompt_cache_miss_tokens"]
    assert hits > 0 and hits + misses == prompts


def test_batch_dry_run_estimates_each_entry_and_the_whole_run(
    repo: Path, simulator: Simulator, cli: Any
) -> None:
    from tests.support.batch import batch, manifest

    prices(repo, f'[prices."{MODEL}"]\ninput = 1.0\noutput = 1.0\n')
    manifest(repo, ["a", "b"])
    r = batch(cli, simulator, "--dry-run")
    assert r.code == 0, r.err
    info = r.json()
    each = [e["cost_estimate"] for e in info["entries"]]
    assert each == [round((e["token_estimate"] + 8192) / 1e6, 6) for e in info["entries"]]
    assert info["cost_estimate"] == round(sum(each), 6)
    assert simulator.chat_requests() == []
