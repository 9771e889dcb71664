"""Ollama's native API is asked to refuse, not cut: ``truncate: false`` (a prompt over
``num_ctx`` is a 400, not its start dropped) and ``shift: false`` (an answer that reaches the
end of the context stops, rather than the context sliding under it), as Ollama 0.12.6 and later
read them; the simulator acts on both as Ollama does."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from deepseek_review.chat import native
from deepseek_review.testing.simulator import Simulator
from deepseek_review.testing.simulator.answer import prompt_token_estimate
from deepseek_review.testing.simulator.native import INPUT_TOO_LONG

MakeSim = Callable[..., Simulator]
#: Text whose every character is a token to the simulator (and to few real tokenizers): the
#: plain estimate (bytes / 4) under-counts it fourfold.
DENSE = "!" * 12_000


def chat_bodies(sim: Simulator) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in sim.chat_requests()]


def native_run(cli: Any, sim: Simulator, *more: str) -> Any:
    return cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url, "--api",
               "ollama", *more)  # fmt: skip


# --------------------------------------------------------------------------- the body


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_the_native_body_asks_ollama_to_refuse_rather_than_truncate_or_shift(
    repo: Path, make_simulator: MakeSim, cli: Any, stream: str
) -> None:
    sim = make_simulator(answer_words=40)
    assert native_run(cli, sim, stream).code == 0
    [body] = chat_bodies(sim)
    assert (body["truncate"], body["shift"]) == (False, False)
    assert body["options"]["num_ctx"] in native.STEPS  # a fixed step: no reload between parts


def test_continuations_refuse_truncation_too(repo: Path, make_simulator: MakeSim, cli: Any) -> None:
    sim = make_simulator(answer_words=120)
    assert native_run(cli, sim, "--max-tokens", "40").code == 0
    bodies = chat_bodies(sim)
    assert len(bodies) > 1
    assert all((b["truncate"], b["shift"]) == (False, False) for b in bodies)


def test_an_extra_body_that_sets_truncate_is_obeyed(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(answer_words=40)
    assert native_run(cli, sim, "--extra-body", '{"truncate": true}').code == 0
    [body] = chat_bodies(sim)
    assert (body["truncate"], body["shift"]) == (True, False)


def test_the_openai_body_carries_no_ollama_only_fields(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(answer_words=40)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url)
    assert r.code == 0, r.err
    [body] = chat_bodies(sim)
    assert "truncate" not in body and "shift" not in body


def test_a_chain_sent_without_the_fields_verifies_and_continues_with_them(
    repo: Path, make_simulator: MakeSim, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = make_simulator(answer_words=60)
    with monkeypatch.context() as old_version:
        old_version.setattr(native, "REFUSE_OVERFLOW", {})
        cut = native_run(cli, sim, "--max-tokens", "40", "--max-continuations", "0")
    assert cut.code == 4, cut.err
    [record] = (repo / "reviews").glob("*.request.json")
    assert b'"truncate"' not in record.read_bytes()
    assert cli("verify", "reviews").code == 0
    [answer] = (repo / "reviews").glob("*.md")
    done = cli("continue", str(answer.relative_to(repo)), "--endpoint", sim.base_url)
    assert done.code == 0, done.err
    old, new = chat_bodies(sim)
    assert "truncate" not in old and (new["truncate"], new["shift"]) == (False, False)
    v = cli("verify", "--strict", "reviews")
    assert v.code == 0, v.out + v.err


# --------------------------------------------------------------------------- a real refusal


def test_a_prompt_the_estimate_under_counts_is_refused_by_ollama_not_cut(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    (repo / "docs" / "dense.txt").write_text(DENSE, encoding="utf-8")
    sim = make_simulator()
    r = cli("run", "-c", "docs/dense.txt", "-p", "x", "--endpoint", sim.base_url, "--api",
            "ollama", "--max-tokens", "100")  # fmt: skip
    assert r.code == 5, r.err
    assert INPUT_TOO_LONG in r.err
    assert not (repo / "reviews").exists() or not list((repo / "reviews").iterdir())


# --------------------------------------------------------------------------- the simulator


def _messages(n: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": " ".join(["word"] * n)}]


@pytest.mark.parametrize("stream", [True, False])
def test_the_simulator_refuses_a_prompt_over_num_ctx_when_told_not_to_truncate(
    make_simulator: MakeSim, stream: bool
) -> None:
    sim = make_simulator()
    body = {"model": "m", "messages": _messages(600), "stream": stream, "truncate": False,
            "options": {"num_ctx": 512}}  # fmt: skip
    r = httpx.post(sim.base_url + "/api/chat", json=body)
    assert (r.status_code, r.json()) == (400, {"error": INPUT_TOO_LONG})


def test_the_simulator_still_cuts_silently_when_truncation_is_not_refused(
    make_simulator: MakeSim,
) -> None:
    sim = make_simulator()
    messages = _messages(600)
    body = {"model": "m", "messages": messages, "stream": False, "options": {"num_ctx": 512}}
    r = httpx.post(sim.base_url + "/api/chat", json=body)
    assert r.status_code == 200
    assert r.json()["prompt_eval_count"] == 512 < prompt_token_estimate(messages)


@pytest.mark.parametrize(("shift", "reason"), [(False, "length"), (True, "stop")])
def test_without_shift_the_simulators_answer_stops_at_the_end_of_the_context(
    make_simulator: MakeSim, shift: bool, reason: str
) -> None:
    sim = make_simulator(answer_words=200)
    messages = _messages(400)
    body = {"model": "m", "messages": messages, "stream": False, "shift": shift,
            "options": {"num_ctx": 512, "num_predict": 1000}}  # fmt: skip
    answer = httpx.post(sim.base_url + "/api/chat", json=body).json()
    assert answer["done_reason"] == reason
    if not shift:
        assert answer["eval_count"] == 512 - prompt_token_estimate(messages)


def test_the_simulator_refuses_a_truncate_that_is_not_a_boolean(make_simulator: MakeSim) -> None:
    sim = make_simulator()
    body = {"model": "m", "messages": _messages(3), "stream": False, "truncate": "no"}
    r = httpx.post(sim.base_url + "/api/chat", json=body)
    assert r.status_code == 400 and "truncate" in r.json()["error"]


def test_a_prompt_denser_than_bytes_over_four_is_refused_not_cut(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    (repo / "docs" / "large.txt").write_text("ab " * 4_000, encoding="utf-8")
    sim = make_simulator(answer_words=20)
    r = cli("run", "-c", "docs/large.txt", "-p", "x", "--endpoint", sim.base_url, "--api",
            "ollama", "--max-tokens", "100")  # fmt: skip
    assert r.code == 5 and INPUT_TOO_LONG in r.err
