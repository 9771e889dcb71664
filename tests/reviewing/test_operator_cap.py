"""The operator's token cap: repository files cannot run up the operator's bill past it.

A manifest or the repository's config file may raise ``max_tokens`` and
``max_continuations`` or add entries; ``--max-run-tokens`` (or
``DEEPSEEK_REVIEW_MAX_RUN_TOKENS``), which no repository file may set, bounds the worst case
of everything ``run``, ``continue`` and ``batch`` would send: each prompt re-sent with every
continuation allowed, every answer at its cap. Over it, one line naming the flag and the
estimate, exit 2, before the first request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.chat.tokens import worst_case
from deepseek_review.testing.simulator import Simulator

Cli = Callable[..., Any]

RUN = ("run", "-c", "docs/spec.md", "-p", "Check the mean.")


def run(cli: Cli, simulator: Simulator, *extra: str) -> Any:
    return cli(*RUN, "--endpoint", simulator.base_url, "--retry-wait", "0.01", *extra)


def prompt_tokens(cli: Cli, simulator: Simulator, *extra: str) -> int:
    r = run(cli, simulator, "--dry-run", "--json", *extra)
    assert r.code == 0, r.err
    return int(r.json()["token_estimate"])


def assert_capped(r: Any, simulator: Simulator, shown: str, estimate: int) -> None:
    """Exit 2, one error line naming the cap and the estimate, nothing sent."""
    assert r.code == 2, (r.code, r.err)
    errors = [ln for ln in r.err.splitlines() if ln.startswith("deepseek-review: error: ")]
    assert len(errors) == 1, r.err
    assert f"{shown}:" in errors[0] and f"may use up to {estimate} tokens" in errors[0], r.err
    assert simulator.chat_requests() == []


def test_worst_case_counts_every_resent_prompt_and_answer_cap():
    # 3 requests on a 100-token prompt, 10 then 5 tokens each: 100+10, 100+10+5, 100+15+5.
    assert worst_case(100, 10, 5, 2) == 110 + 115 + 120
    assert worst_case(100, 10, 5, 0) == 110
    assert worst_case(100, 5, 5, 1, answered=7) == 112 + 117


def test_run_over_the_flags_cap_is_refused_before_sending(repo, simulator, cli):
    estimate = worst_case(prompt_tokens(cli, simulator), 8192, 8192, 3)
    r = run(cli, simulator, "--max-run-tokens", str(estimate - 1))
    assert_capped(r, simulator, f"--max-run-tokens {estimate - 1}", estimate)


def test_run_within_the_cap_is_sent(repo, simulator, cli):
    estimate = worst_case(prompt_tokens(cli, simulator), 8192, 8192, 3)
    r = run(cli, simulator, "--max-run-tokens", str(estimate))
    assert r.code == 0, r.err
    assert len(simulator.chat_requests()) == 1


def test_the_environments_cap_holds_against_the_repository_config(
    repo, simulator, cli, monkeypatch
):
    (repo / ".deepseek-review.toml").write_text("max_tokens = 100000\nmax_continuations = 9\n")
    estimate = worst_case(prompt_tokens(cli, simulator), 100000, 100000, 9)
    monkeypatch.setenv("DEEPSEEK_REVIEW_MAX_RUN_TOKENS", "50000")
    assert_capped(run(cli, simulator), simulator, "DEEPSEEK_REVIEW_MAX_RUN_TOKENS 50000", estimate)


@pytest.mark.parametrize("name", [".deepseek-review.toml", "pyproject.toml"])
def test_the_repository_config_may_not_set_the_cap(repo, simulator, cli, name):
    table = "[tool.deepseek-review]\n" if name == "pyproject.toml" else ""
    (repo / name).write_text(table + "max_run_tokens = 100000000\n")
    r = run(cli, simulator, "--max-run-tokens", "10")
    assert r.code == 2, r.err
    assert "max_run_tokens" in r.err and "must not raise the operator's token cap" in r.err
    assert simulator.chat_requests() == []


def test_a_continuation_cap_is_counted_for_every_continuation(repo, simulator, cli):
    flags = ("--max-tokens", "100", "--continuation-max-tokens", "50000", "--max-continuations")
    estimate = worst_case(prompt_tokens(cli, simulator), 100, 50000, 2)
    r = run(cli, simulator, *flags, "2", "--max-run-tokens", "60000")
    assert_capped(r, simulator, "--max-run-tokens 60000", estimate)


# --------------------------------------------------------------------------- batch


def write_manifest(root: Path, topics: list[str], **keys: Any) -> Path:
    lines = []
    for topic in topics:
        lines += ["[[review]]", f'topic = "{topic}"', 'prompt = "Check the mean."']
        lines += ['context = "docs/spec.md"']
        lines += [f"{k} = {json.dumps(v)}" for k, v in keys.items()]
    path = root / "reviews.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def batch(cli: Cli, simulator: Simulator, *extra: str) -> Any:
    return cli("batch", "reviews.toml", "--endpoint", simulator.base_url, *extra)


def test_entries_a_manifest_adds_cannot_take_a_batch_over_the_cap(repo, simulator, cli):
    one = worst_case(prompt_tokens(cli, simulator, "--topic", "a"), 8192, 8192, 3)
    write_manifest(repo, ["a", "b", "c"])
    r = batch(cli, simulator, "--max-run-tokens", str(2 * one + 10))
    assert r.code == 2, r.err
    assert "--max-run-tokens" in r.err and "the batch (3 reviews to run)" in r.err, r.err
    assert simulator.chat_requests() == []
    write_manifest(repo, ["a", "b"])
    r = batch(cli, simulator, "--max-run-tokens", str(2 * one + 10))
    assert r.code == 0, r.err
    assert len(simulator.chat_requests()) == 2


def test_a_manifest_entry_raising_max_tokens_is_refused_under_the_cap(
    repo, simulator, cli, monkeypatch
):
    write_manifest(repo, ["a"], max_tokens=1_000_000)
    monkeypatch.setenv("DEEPSEEK_REVIEW_MAX_RUN_TOKENS", "100000")
    r = batch(cli, simulator)
    assert r.code == 3, r.err
    assert "entry 1" in r.err and "DEEPSEEK_REVIEW_MAX_RUN_TOKENS 100000" in r.err, r.err
    assert simulator.chat_requests() == []


@pytest.mark.parametrize("key", ["max_run_tokens", "jobs", "max_total_tokens"])
def test_a_manifest_may_not_set_the_operators_limits(repo, simulator, cli, key):
    write_manifest(repo, ["a"], **{key: 100_000_000})
    r = batch(cli, simulator, "--max-run-tokens", "1000000")
    assert r.code == 3, r.err
    assert f"'{key}' cannot be set in a manifest" in r.err, r.err
    assert simulator.chat_requests() == []


def test_finished_entries_do_not_count_against_the_cap(repo, simulator, cli):
    one = worst_case(prompt_tokens(cli, simulator, "--topic", "a"), 8192, 8192, 3)
    write_manifest(repo, ["a"])
    assert batch(cli, simulator).code == 0
    write_manifest(repo, ["a", "b"])
    r = batch(cli, simulator, "--max-run-tokens", str(one + 10))
    assert r.code == 0, r.err
    assert len(simulator.chat_requests()) == 2  # a's before, b's now


# --------------------------------------------------------------------------- continue


def test_continue_over_the_cap_is_refused_before_sending(repo, make_simulator, cli):
    sim = make_simulator(answer_words=400)
    r = run(cli, sim, "--max-tokens", "20", "--max-continuations", "0", "--json")
    assert r.code == 4, r.err  # cut off: a chain to continue
    receipt = r.json()["segments"][0]["receipt_path"]
    sent = len(sim.chat_requests())
    r = cli("continue", receipt, "--endpoint", sim.base_url, "--max-run-tokens", "100")
    assert r.code == 2, r.err
    assert "--max-run-tokens 100: continuing the chain may use up to" in r.err
    assert len(sim.chat_requests()) == sent
    r = cli("continue", receipt, "--endpoint", sim.base_url, "--max-run-tokens", "1000000")
    assert len(sim.chat_requests()) > sent, r.err
