"""Silent input truncation: a server that kept much less of the prompt than was sent."""

from __future__ import annotations

from tests.support.cli import files_under
from tests.support.prompt import big_spec, run_big


def test_clipped_prompt_fails_with_exit_7_and_writes_nothing(repo, make_simulator, cli):
    big_spec(repo)
    sim = make_simulator(context_window=2048)
    r = run_big(cli, sim)
    assert r.code == 7
    assert "kept only 2048 prompt tokens" in r.err
    assert "OLLAMA_CONTEXT_LENGTH" in r.err
    assert files_under(repo / "reviews") == []


def test_allow_truncated_prompt_keeps_the_answer_and_warns(repo, make_simulator, cli):
    big_spec(repo)
    sim = make_simulator(context_window=2048)
    r = run_big(cli, sim, "--allow-truncated-prompt")
    assert r.code == 0, r.err
    assert "silently truncated the prompt" in r.err
    assert r.json()["segments"][0]["usage"]["prompt_tokens"] == 2048


def test_a_prompt_kept_whole_is_not_mistaken_for_a_clipped_one(repo, make_simulator, cli):
    big_spec(repo)
    sim = make_simulator()
    r = run_big(cli, sim)
    assert r.code == 0, r.err
    assert "truncated the prompt" not in r.err


def test_small_prompts_are_never_judged_clipped(repo, make_simulator, cli):
    sim = make_simulator(context_window=10)
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", sim.base_url)
    assert r.code == 0, r.err


def test_a_clipped_continuation_prompt_stops_the_chain_with_exit_7(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    # The primary fits; the continuation carries the answer so far and is clipped.
    big_spec(repo)
    sim.config.context_window = 100_000
    first = run_big(cli, sim, "--max-tokens", "20", "--max-continuations", "0")
    assert first.code == 4
    sim.config.context_window = 1000
    r = cli("continue", first.json()["segments"][0]["answer_path"], "--endpoint", sim.base_url)
    assert r.code == 7
    assert "kept only 1000 prompt tokens" in r.err
    assert len(files_under(repo / "reviews")) == 3  # the primary's answer, record, receipt


def test_declared_context_window_warns_before_sending(repo, make_simulator, cli):
    big_spec(repo)
    sim = make_simulator()
    r = run_big(cli, sim, "--context-window", "4096")
    assert r.code == 0, r.err
    assert "over the declared --context-window 4096" in r.err


def test_declared_context_window_is_silent_when_the_prompt_fits(repo, make_simulator, cli):
    big_spec(repo)
    sim = make_simulator()
    r = run_big(cli, sim, "--context-window", "131072")
    assert "--context-window" not in r.err
