"""A native (``--api ollama``) batch: one ``num_ctx`` per model and a ``keep_alive`` that
spans the batch, so Ollama does not reload the model between entries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deepseek_review.testing.simulator import Simulator
from tests.support.batch import batch, manifest, statuses
from tests.support.git import commit_all


def _sizes(repo: Path) -> None:
    """A manifest whose two entries need different num_ctx steps on their own."""
    (repo / "docs" / "big.md").write_text("word " * 30_000 + "\n", encoding="utf-8")
    commit_all(repo)
    manifest(repo, ["small", "big"], per_entry={"big": {"context": "docs/big.md"}})


def _sent(sim: Simulator) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in sim.chat_requests()]


def test_every_request_of_a_model_asks_for_the_largest_num_ctx_and_keeps_it_loaded(
    repo, make_simulator, cli
):
    sim = make_simulator(answer_words=20)
    _sizes(repo)
    r = batch(cli, sim, "--api", "ollama", "--jobs", "1")
    assert r.code == 0, r.err
    bodies = _sent(sim)
    assert len(bodies) == 2
    assert len({b["options"]["num_ctx"] for b in bodies}) == 1
    assert {b["keep_alive"] for b in bodies} == {"30m"}


def test_the_records_of_a_resized_batch_verify(repo, make_simulator, cli):
    sim = make_simulator(answer_words=20)
    _sizes(repo)
    assert batch(cli, sim, "--api", "ollama").code == 0
    r = cli("verify", "reviews")
    assert r.code == 0, r.err


def test_a_rerun_of_a_resized_batch_sends_nothing(repo, make_simulator, cli):
    sim = make_simulator(answer_words=20)
    _sizes(repo)
    assert batch(cli, sim, "--api", "ollama").code == 0
    r = batch(cli, sim, "--api", "ollama")
    assert r.code == 0, r.err
    assert set(statuses(r).values()) == {"skipped"} and len(sim.chat_requests()) == 2


def test_a_review_run_sent_with_its_own_num_ctx_is_adopted_by_the_batch(repo, make_simulator, cli):
    sim = make_simulator(answer_words=20)
    _sizes(repo)
    r = cli(
        "run", "-c", "docs/spec.md", "-p", "Check small.", "--topic", "small",
        "--endpoint", sim.base_url, "--api", "ollama",
    )  # fmt: skip
    assert r.code == 0, r.err
    r = batch(cli, sim, "--api", "ollama")
    assert r.code == 0, r.err
    assert statuses(r) == {"small": "skipped", "big": "ok"}


def test_a_cut_off_entry_s_continuations_keep_the_batch_s_num_ctx_and_keep_alive(
    repo, make_simulator, cli
):
    sim = make_simulator(answer_words=200)
    _sizes(repo)
    r = batch(cli, sim, "--api", "ollama", "--max-tokens", "60", "--max-continuations", "4")
    assert r.code == 0, r.err
    bodies = _sent(sim)
    assert len(bodies) > 2  # continuations were sent
    assert len({b["options"]["num_ctx"] for b in bodies}) == 1
    assert {b["keep_alive"] for b in bodies} == {"30m"}
    assert cli("verify", "reviews").code == 0


def test_an_entry_added_with_a_larger_step_does_not_resend_the_finished_ones(
    repo, make_simulator, cli
):
    """The first run sized every entry to "big"'s step; a third entry needs a larger one, so
    the batch now sizes to that: "small"'s finished review (sent with "big"'s step, neither
    its own step nor the new one) is the same review of the same content, not sent again."""
    sim = make_simulator(answer_words=20)
    _sizes(repo)
    assert batch(cli, sim, "--api", "ollama").code == 0
    first = {b["options"]["num_ctx"] for b in _sent(sim)}
    (repo / "docs" / "more.md").write_text("word " * 38_000 + "\n", encoding="utf-8")
    commit_all(repo)
    manifest(repo, ["small", "big", "huge"],
             per_entry={"big": {"context": "docs/big.md"},
                        "huge": {"context": ["docs/big.md", "docs/more.md"]}})  # fmt: skip
    sim.reset()
    r = batch(cli, sim, "--api", "ollama")
    assert r.code == 0, r.err
    assert statuses(r) == {"small": "skipped", "big": "skipped", "huge": "ok"}
    (sent,) = _sent(sim)
    assert sent["options"]["num_ctx"] > max(first)
