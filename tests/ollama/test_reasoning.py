"""``--reasoning``: one option, each server flavour's fields, refused where the server says no."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator
from tests.support.cli import review

MakeSim = Callable[..., Simulator]

#: What each ``--server`` kind gets for ``none`` and for ``max``.
EXPECTED: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "ollama": ({"reasoning_effort": "none"}, {"reasoning_effort": "max"}),
    "deepseek": (
        {"thinking": {"type": "disabled"}},
        {"thinking": {"type": "enabled"}, "reasoning_effort": "max"},
    ),
    "vllm": ({"chat_template_kwargs": {"enable_thinking": False}}, {"reasoning_effort": "high"}),
    "llama.cpp": (
        {"chat_template_kwargs": {"enable_thinking": False}},
        {"chat_template_kwargs": {"enable_thinking": True}},
    ),
}


def sent(sim: Simulator) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(sim.chat_requests()[-1].body)
    return body


@pytest.mark.parametrize("server", list(EXPECTED))
def test_each_server_kind_gets_its_own_fields_and_none_turns_thinking_off(
    repo: Path, make_simulator: MakeSim, cli: Any, server: str
) -> None:
    sim = make_simulator(reasoning_words=30, answer_words=40)
    off, full = EXPECTED[server]
    thinking = review(
        cli, sim, "--no-stream", "--server", server, "--reasoning", "max", "--topic", "on"
    )
    assert thinking.code == 0, thinking.err
    assert {k: sent(sim)[k] for k in full} == full
    quiet = review(
        cli, sim, "--no-stream", "--server", server, "--reasoning", "none", "--topic", "off"
    )
    assert quiet.code == 0, quiet.err
    assert {k: sent(sim)[k] for k in off} == off
    used = [r.json()["segments"][0]["usage"]["completion_tokens"] for r in (thinking, quiet)]
    assert used[0] - used[1] == 30  # the reasoning tokens, gone


def test_the_level_is_in_the_request_record(repo: Path, make_simulator: MakeSim, cli: Any) -> None:
    sim = make_simulator(reasoning_words=5)
    r = review(cli, sim, "--no-stream", "--reasoning", "low")
    assert r.code == 0, r.err
    [record] = (repo / "reviews").glob("*.request.json")
    assert json.loads(record.read_text())["body"]["reasoning_effort"] == "low"
    assert cli("verify", "reviews").code == 0


def test_a_level_for_a_model_that_does_not_think_is_refused_before_sending(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(reasoning_words=0)
    r = review(cli, sim, "--no-stream", "--reasoning", "high")
    assert r.code == 2
    assert "--reasoning high:" in r.err and "does not think" in r.err
    assert "capabilities: completion" in r.err and "--reasoning none" in r.err
    assert sim.chat_requests() == []


def test_none_is_sent_to_a_model_that_does_not_think(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(reasoning_words=0)
    r = review(cli, sim, "--no-stream", "--reasoning", "none")
    assert r.code == 0, r.err
    assert sent(sim)["reasoning_effort"] == "none"


def test_no_level_sends_no_reasoning_field(repo: Path, make_simulator: MakeSim, cli: Any) -> None:
    sim = make_simulator()
    assert review(cli, sim, "--no-stream").code == 0
    assert not {"reasoning_effort", "thinking", "chat_template_kwargs"} & sent(sim).keys()


def test_an_extra_body_that_sets_the_same_field_is_refused(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator()
    r = review(
        cli,
        sim,
        "--no-stream",
        "--reasoning",
        "low",
        "--extra-body",
        '{"reasoning_effort": "high"}',
    )
    assert r.code == 2
    assert "--extra-body sets 'reasoning_effort' and --reasoning low sets it too" in r.err
    assert sim.requests == []


def test_an_unknown_level_names_the_choices(repo: Path, cli: Any) -> None:
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--reasoning", "extreme")
    assert r.code == 2
    assert "--reasoning" in r.err and "none, low, medium, high, max" in r.err
