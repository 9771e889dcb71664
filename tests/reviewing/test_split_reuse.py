"""``run --split`` after a re-plan: parts whose content did not change reuse their chains."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from deepseek_review.testing.simulator.server import Simulator
from tests.support.cli import CliResult
from tests.support.pool import endpoint_flags, start_servers
from tests.support.split import split_records, write_texts

WINDOW = 8192


@pytest.fixture
def sim(make_simulator: Callable[..., Simulator]) -> Simulator:
    return make_simulator(context_window=WINDOW, context_overflow="refuse", answer_words=60)


@pytest.fixture
def big(repo: Path) -> Path:
    """A folder a part: three parts of four files each."""
    write_texts(repo, [f"big/{d}/mod{i}.py" for d in "abc" for i in range(4)], 4600)
    return repo


def _run(cli: Callable[..., CliResult], sim: Simulator) -> CliResult:
    return cli(
        "run", "--split", "-c", "big", "-p", "Review.", "--endpoint", sim.base_url,
        "--max-tokens", "1024", "--context-window", str(WINDOW),
    )  # fmt: skip


def test_after_a_replan_only_the_changed_parts_and_the_synthesis_are_sent(big, cli, sim):
    assert _run(cli, sim).code == 0
    (first,) = split_records(big / "reviews")
    write_texts(big, ["big/d/new.py"], 16_000, seed=50)  # a fourth part: every note changes
    sim.reset()
    r = _run(cli, sim)
    assert r.code == 0, r.err
    assert len(sim.chat_requests()) == 2  # the new part and the synthesis
    second = max(split_records(big / "reviews"), key=lambda d: len(d["parts"]))
    assert len(second["parts"]) == len(first["parts"]) + 1
    for old, new in zip(first["parts"], second["parts"], strict=False):
        assert new["reused_from"] == old["topic"] != new["topic"]
        assert new["receipts"] == old["receipts"]
    assert "reused_from" not in second["parts"][-1]
    assert cli("verify", "--strict", "reviews").code == 0


def test_a_part_whose_file_changed_is_sent_again_after_a_replan(big, cli, sim):
    assert _run(cli, sim).code == 0
    write_texts(big, ["big/d/new.py"], 16_000, seed=50)
    write_texts(big, ["big/a/mod0.py"], 4600, seed=77)  # the same size, other bytes
    sim.reset()
    assert _run(cli, sim).code == 0
    second = max(split_records(big / "reviews"), key=lambda d: len(d["parts"]))
    assert "reused_from" not in second["parts"][0]
    assert [("reused_from" in p) for p in second["parts"]] == [False, True, True, False]
    assert len(sim.chat_requests()) == 3


def test_after_a_replan_over_a_pool_parts_any_server_answered_are_reused(big, cli, make_simulator):
    servers = start_servers(
        make_simulator, 2, context_window=WINDOW, context_overflow="refuse", answer_words=60,
        latency=0.05,
    )  # fmt: skip
    flags = [*endpoint_flags(servers), "--jobs", "4"]
    args = ["run", "--split", "-c", "big", "-p", "Review.", "--max-tokens", "1024"]
    first = cli(*args, "--context-window", str(WINDOW), *flags)
    assert first.code == 0, first.err
    (record,) = split_records(big / "reviews")
    answered = {_endpoint(big, p["receipts"][0]) for p in record["parts"]}
    assert answered == {s.chat_url for s in servers}  # each server answered a part
    write_texts(big, ["big/d/new.py"], 16_000, seed=50)
    for s in servers:
        s.reset()
    r = cli(*args, "--context-window", str(WINDOW), *flags)
    assert r.code == 0, r.err
    assert sum(len(s.chat_requests()) for s in servers) == 2  # the new part, the synthesis
    second = max(split_records(big / "reviews"), key=lambda d: len(d["parts"]))
    assert [("reused_from" in p) for p in second["parts"]] == [True, True, True, False]


def _endpoint(repo: Path, receipt: str) -> str:
    return str(json.loads((repo / receipt).read_text(encoding="utf-8"))["endpoint"])
