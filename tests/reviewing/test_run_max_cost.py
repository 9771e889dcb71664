"""``run --max-cost``: a review whose worst case costs more than the cap is refused before
anything is sent, at the operator's prices only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.ollama.pricing import Price
from deepseek_review.reviewing.cost_cap import reports_cache_hits, worst_cost
from deepseek_review.testing.simulator import Simulator
from tests.support.cli import files_under, review

MODEL = "deepseek-v4-flash"
#: A dollar per million tokens each way: a review of the spec costs well under a cent.
DOLLAR = {"input": 1.0, "output": 1.0}


def operator_prices(monkeypatch: pytest.MonkeyPatch, table: dict[str, Any]) -> None:
    monkeypatch.setenv("DEEPSEEK_REVIEW_PRICES", json.dumps(table))


def test_a_review_whose_worst_case_costs_more_is_refused_before_sending(
    repo: Path, simulator: Simulator, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator_prices(monkeypatch, {MODEL: DOLLAR})
    r = review(cli, simulator, "--max-cost", "0.001")  # 8192 answer tokens alone: 0.0082
    assert r.code == 2
    assert "--max-cost 0.001: the review may cost up to 0.0" in r.err
    assert "nothing was sent" in r.err
    assert simulator.chat_requests() == []
    assert files_under(repo / "reviews") == []


def test_a_review_under_the_cap_is_sent(
    repo: Path, simulator: Simulator, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator_prices(monkeypatch, {MODEL: DOLLAR})
    r = review(cli, simulator, "--max-cost", "1", "--max-continuations", "0")
    assert r.code == 0, r.err
    assert len(simulator.chat_requests()) == 1


def test_the_cap_counts_every_continuation_allowed(
    repo: Path, simulator: Simulator, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator_prices(monkeypatch, {MODEL: DOLLAR})
    cap = ("--max-cost", "0.001", "--max-tokens", "400")
    assert review(cli, simulator, *cap, "--max-continuations", "0").code == 0
    r = review(cli, simulator, *cap, "--max-continuations", "3", "--topic", "more")
    assert r.code == 2 and "nothing was sent" in r.err


def test_prices_from_the_repositorys_config_do_not_count(
    repo: Path, simulator: Simulator, cli: Any
) -> None:
    (repo / ".deepseek-review.toml").write_text(
        f'[prices."{MODEL}"]\ninput = 0.0\noutput = 0.0\n', encoding="utf-8"
    )
    r = review(cli, simulator, "--max-cost", "1")
    assert r.code == 2
    assert "--max-cost counts only in prices the operator sets (DEEPSEEK_REVIEW_PRICES)" in r.err
    assert simulator.chat_requests() == []


def test_a_model_without_an_operator_price_is_refused_naming_it(
    repo: Path, simulator: Simulator, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator_prices(monkeypatch, {"other-model": DOLLAR})
    r = review(cli, simulator, "--max-cost", "1")
    assert r.code == 2
    assert f"--max-cost needs a price for {MODEL}" in r.err


def test_a_split_review_is_held_against_the_cap_as_a_whole(
    repo: Path, simulator: Simulator, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator_prices(monkeypatch, {MODEL: DOLLAR})
    for i in range(4):
        (repo / "docs" / f"part{i}.md").write_text(f"Section {i} says words.\n" * 120)
    split = ("--split", "--context-window", "2048", "--max-tokens", "256", "-q")
    r = review(cli, simulator, *split, "--max-cost", "0.002", context=("docs",))
    assert r.code == 2
    assert "the split review (" in r.err and "reviews) may cost up to" in r.err
    assert simulator.chat_requests() == []


def test_continuations_count_their_resent_prefix_as_cache_hits_only_where_reported() -> None:
    price = Price(input=1.0, output=2.0, cache_hit=0.1)
    uncached = worst_cost(price, 10_000, 1_000, 1_000, 2, cached=False)
    cached = worst_cost(price, 10_000, 1_000, 1_000, 2, cached=True)
    assert cached < uncached
    assert worst_cost(price, 10_000, 1_000, 1_000, 0, cached=True) == price.cost(10_000, 1_000)
    assert reports_cache_hits("deepseek", "https://example.org/v1/chat/completions")
    assert reports_cache_hits("ollama", "https://api.deepseek.com/chat/completions")
    assert not reports_cache_hits("ollama", "http://127.0.0.1:11434/v1/chat/completions")


def test_the_cap_counts_the_findings_extraction_that_follows_the_review(
    repo: Path, simulator: Simulator, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    operator_prices(monkeypatch, {MODEL: DOLLAR})
    cap = ("--max-cost", "0.002", "--max-tokens", "400", "--max-continuations", "0")
    asked = ("--template", "code-review", "--findings")
    block = review(cli, simulator, *cap, *asked, "--findings-from", "block")
    assert block.code == 0, block.err  # the review alone fits
    sent = len(simulator.chat_requests())
    r = review(cli, simulator, *cap, *asked, "--topic", "extracted")
    assert r.code == 2
    assert "--max-cost 0.002: the review and its findings extraction may cost up to" in r.err
    assert "nothing was sent" in r.err
    assert len(simulator.chat_requests()) == sent
