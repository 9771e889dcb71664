"""``--api ollama``: the request record is the body sent, byte for byte, at every ``num_ctx``
step boundary, for a primary request and for a continuation.

The native body's ``options.num_ctx`` is the step that holds the prompt's estimate plus the
answer's cap; the record once sized it again from its own messages (references, not texts),
so every prompt past the smallest step was recorded with ``num_ctx`` 4096 and failed
``verify --strict``. The table below puts the request's need (estimate plus cap) one token
below, on, and one token above each step, with a prompt that fills most of it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.chat.native import STEPS, step_for
from deepseek_review.chat.tokens import estimate_tokens
from deepseek_review.testing.simulator import Simulator

MakeSim = Callable[..., Simulator]

#: Runtime context of the server, as in the report: far below every prompt here.
RUNTIME_CONTEXT = 1024
#: Tokens of the cap left over when the prompt is sized for a step.
HEADROOM = 200
EDGES = [(step, side) for step in STEPS for side in (-1, 0, 1)]
LINE = "The mean of the three values is computed over the whole window, as stated.\n"
BIG = ("--max-file-bytes", "4000000", "--max-context-bytes", "4000000")


def _write(repo: Path, size: int) -> None:
    text = (LINE * (size // len(LINE) + 1))[: size - 1] + "\n"
    (repo / "docs" / "big.md").write_text(text, encoding="ascii")


def _estimate(cli: Any, sim: Simulator) -> int:
    dry = cli("run", "-c", "docs/big.md", "-p", "Check it.", "--endpoint", sim.base_url,
              "--api", "ollama", "--dry-run", "--json", *BIG)  # fmt: skip
    assert dry.code == 0, dry.err
    return int(dry.json()["token_estimate"])


def _sized_prompt(repo: Path, cli: Any, sim: Simulator, tokens: int) -> int:
    """Size docs/big.md so the prompt's estimate is exactly ``tokens``; return it."""
    _write(repo, 4000)
    base = _estimate(cli, sim)
    _write(repo, 4000 + 4 * (tokens - base))  # 4 bytes of ASCII: one estimated token
    return _estimate(cli, sim)


def _need(body: dict[str, Any]) -> int:
    texts = [str(m["content"]) for m in body["messages"]]
    return estimate_tokens(texts) + int(body["options"]["num_predict"])


def _assert_recorded_as_sent(repo: Path, sent: bytes, need: int) -> None:
    """The record of the request whose body was ``sent`` holds its fields as sent, and its
    receipt hashes exactly those bytes; ``num_ctx`` is the step holding ``need``."""
    body = json.loads(sent)
    assert body["options"]["num_ctx"] == step_for(need)
    digest = "sha256:" + hashlib.sha256(sent).hexdigest()
    [receipt] = [
        p for p in (repo / "reviews").glob("*.receipt.json")
        if json.loads(p.read_text())["prompt_sha256"] == digest
    ]  # fmt: skip
    record = json.loads(receipt.with_name(receipt.name.replace("receipt", "request")).read_text())
    recorded = {k: v for k, v in record["body"].items() if k != "messages"}
    assert recorded == {k: v for k, v in body.items() if k != "messages"}


def _native_sim(make_simulator: MakeSim, words: int) -> Simulator:
    return make_simulator(
        context_window=RUNTIME_CONTEXT, model_context_length=1 << 20, answer_words=words
    )


@pytest.mark.parametrize(("step", "side"), EDGES)
def test_primary_record_is_the_body_sent_at_each_num_ctx_step(
    repo: Path, make_simulator: MakeSim, cli: Any, step: int, side: int
) -> None:
    sim = _native_sim(make_simulator, words=HEADROOM // 4)  # ends well within the cap
    estimate = _sized_prompt(repo, cli, sim, step - HEADROOM)
    cap = step + side - estimate
    r = cli("run", "-c", "docs/big.md", "-p", "Check it.", "--endpoint", sim.base_url,
            "--api", "ollama", "--max-tokens", str(cap), "--max-continuations", "0",
            *BIG)  # fmt: skip
    assert r.code == 0, r.err
    [sent] = sim.chat_requests()
    assert _need(json.loads(sent.body)) == step + side
    _assert_recorded_as_sent(repo, sent.body, step + side)
    v = cli("verify", "--strict", "reviews")
    assert v.code == 0, v.out + v.err


@pytest.mark.parametrize(("step", "side"), EDGES)
def test_continuation_record_is_the_body_sent_at_each_num_ctx_step(
    repo: Path, make_simulator: MakeSim, cli: Any, step: int, side: int
) -> None:
    sim = _native_sim(make_simulator, words=HEADROOM * 3)  # cut, then continued to its end
    _sized_prompt(repo, cli, sim, step - 2 * HEADROOM)
    first = cli("run", "-c", "docs/big.md", "-p", "Check it.", "--endpoint", sim.base_url,
                "--api", "ollama", "--max-tokens", str(HEADROOM), "--max-continuations", "0",
                "--json", *BIG)  # fmt: skip
    assert first.code == 4, first.err
    [primary] = sim.chat_requests()
    answer = first.json()["segments"][0]["answer_path"]
    so_far = (repo / answer).read_text(encoding="utf-8")
    # The continuation repeats the prompt and adds the answer so far as an assistant prefill.
    estimate = estimate_tokens([m["content"] for m in json.loads(primary.body)["messages"]])
    estimate += estimate_tokens([so_far])
    cap = step + side - estimate
    more = cli("continue", answer, "--endpoint", sim.base_url,
               "--continuation-max-tokens", str(cap), "--max-continuations", "20")  # fmt: skip
    assert more.code == 0, more.err
    continuations = sim.chat_requests()[1:]
    assert _need(json.loads(continuations[0].body)) == step + side
    for sent in continuations:
        body = json.loads(sent.body)
        assert body["messages"][-1]["role"] == "assistant"
        _assert_recorded_as_sent(repo, sent.body, _need(body))
    v = cli("verify", "--strict", "reviews")
    assert v.code == 0, v.out + v.err


def test_continuations_made_by_run_are_recorded_as_sent(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    """The report's case: a ~5,700-token prompt, a 1,024-token runtime context, a chain."""
    sim = _native_sim(make_simulator, words=HEADROOM * 3)
    _sized_prompt(repo, cli, sim, 5700)
    r = cli("run", "-c", "docs/big.md", "-p", "Check it.", "--endpoint", sim.base_url,
            "--api", "ollama", "--max-tokens", "150", "--max-continuations", "5",
            *BIG)  # fmt: skip
    assert r.code == 0, r.err
    sent = sim.chat_requests()
    assert len(sent) > 2
    for request in sent:
        body = json.loads(request.body)
        _assert_recorded_as_sent(repo, request.body, _need(body))
        assert body["options"]["num_ctx"] == 8192
    v = cli("verify", "--strict", "reviews")
    assert v.code == 0, v.out + v.err
