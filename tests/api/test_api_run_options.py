"""The library takes every option ``run`` takes: the cost cap, and a split review's parts
over a pool of servers, merged flags > environment > config file > defaults as ``run`` does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from deepseek_review import ReviewOptions, ReviewResult, api, review
from deepseek_review.errors import ConfigError
from deepseek_review.reviewing.split_plan import SplitReview
from deepseek_review.reviewing.split_run import SplitOutcome
from tests.support.pool import split_files, start_servers

MODEL = "deepseek-v4-flash"
#: A dollar per million tokens each way: the spec's worst case (8192 answer tokens) is 0.0082.
PRICES = {"DEEPSEEK_REVIEW_PRICES": json.dumps({MODEL: {"input": 1.0, "output": 1.0}})}
SPEC: dict[str, Any] = {"context": ["docs/spec.md"], "prompt": "Check."}
WINDOW = 4096


def _split(**options: Any) -> dict[str, Any]:
    return {"context": ["docs"], "prompt": "Review the text.", "split": True,
            "max_tokens": 512, "context_window": WINDOW, **options}  # fmt: skip


def test_review_refuses_a_review_over_max_cost_before_sending(repo, simulator):
    with pytest.raises(ConfigError, match=r"^max_cost 0\.001: the review may cost up to "):
        review(**SPEC, endpoint=simulator.base_url, max_cost=0.001, env=PRICES)
    assert simulator.chat_requests() == []
    assert not (repo / "reviews").exists()


def test_plan_review_holds_max_cost_against_its_plan(repo, simulator):
    with pytest.raises(ConfigError, match="nothing was sent"):
        api.plan_review(**SPEC, endpoint=simulator.base_url, max_cost=0.001, env=PRICES)


def test_review_under_max_cost_is_sent(repo, simulator):
    result = review(**SPEC, endpoint=simulator.base_url, max_cost=1.0, env=PRICES)
    assert isinstance(result, ReviewResult)
    assert len(simulator.chat_requests()) == 1


def test_max_cost_counts_only_the_operators_prices_not_the_config_files(repo, simulator):
    (repo / ".deepseek-review.toml").write_text(
        f'[prices."{MODEL}"]\ninput = 0.0\noutput = 0.0\n', encoding="utf-8"
    )
    with pytest.raises(ConfigError, match=r"max_cost counts only in prices the operator sets"):
        review(**SPEC, endpoint=simulator.base_url, max_cost=1.0, env={})
    assert simulator.chat_requests() == []


def test_review_of_complete_options_still_holds_max_cost(repo, simulator):
    options = ReviewOptions(context=("docs/spec.md",), prompt="Check.", endpoint=simulator.base_url)
    with pytest.raises(ConfigError, match="nothing was sent"):
        review(options, max_cost=0.001, env=PRICES)
    assert simulator.chat_requests() == []


def test_a_split_review_spreads_its_parts_over_a_list_of_endpoints(repo, make_simulator):
    split_files(repo, 6)
    servers = start_servers(make_simulator, 2, answer_words=40, latency=0.05)
    outcome = review(**_split(endpoint=[s.base_url for s in servers], jobs=4))
    assert isinstance(outcome, SplitOutcome)
    assert outcome.failure is None and outcome.record_path is not None
    receipts = [json.loads(p.read_text()) for p in (repo / "reviews").glob("*.receipt.json")]
    assert {rc["endpoint"] for rc in receipts} == {s.chat_url for s in servers}


def test_a_split_review_takes_its_pool_from_the_environment(repo, make_simulator):
    split_files(repo, 6)
    servers = start_servers(make_simulator, 2, answer_words=40)
    env = {"DEEPSEEK_REVIEW_ENDPOINTS": ",".join(s.base_url for s in servers)}
    planned = api.plan_review(**_split(jobs=2), env=env)
    assert isinstance(planned, SplitReview)
    assert [ep.url for ep in planned.options.pool] == [s.chat_url for s in servers]
    assert [len(s.chat_requests()) for s in servers] == [0, 0]


def test_split_from_the_config_file_plans_a_split_review_as_run_does(repo, simulator):
    split_files(repo, 6)
    (repo / ".deepseek-review.toml").write_text("split = true\n", encoding="utf-8")
    planned = api.plan_review(**{**_split(), "split": None}, endpoint=simulator.base_url)
    assert isinstance(planned, SplitReview)
    assert len(planned.parts) > 1


def test_a_split_review_over_max_total_tokens_is_refused_before_sending(repo, simulator):
    split_files(repo, 6)
    with pytest.raises(ConfigError, match=r"max_total_tokens"):
        review(**_split(endpoint=simulator.base_url, max_total_tokens=1000))
    assert simulator.chat_requests() == []


def test_a_split_review_over_max_cost_is_refused_before_sending(repo, simulator):
    split_files(repo, 6)
    with pytest.raises(ConfigError, match=r"the split review \(\d+ reviews\) may cost up to"):
        review(**_split(endpoint=simulator.base_url, max_cost=0.001), env=PRICES)
    assert simulator.chat_requests() == []


def test_two_endpoints_without_split_are_refused_naming_the_key(repo, make_simulator):
    servers = start_servers(make_simulator, 2)
    with pytest.raises(ConfigError, match=r"^endpoint was given more than once"):
        review(**SPEC, endpoint=[s.base_url for s in servers])
    assert [len(s.chat_requests()) for s in servers] == [0, 0]
