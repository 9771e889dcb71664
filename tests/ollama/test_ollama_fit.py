"""Refused before sending: a prompt an Ollama server would silently cut (exit 14)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.chat.native import step_for
from deepseek_review.testing.simulator import Simulator
from tests.support.cli import files_under
from tests.support.prompt import big_spec, run_big

MakeSim = Callable[..., Simulator]


def api_paths(sim: Simulator) -> list[str]:
    return [r.path for r in sim.requests if r.path.startswith("/api/")]


def test_a_prompt_over_the_loaded_context_is_refused_before_any_chat_request(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    big_spec(repo)
    sim = make_simulator(context_window=8192, preloaded=True)
    r = run_big(cli, sim)
    assert r.code == 14, r.err
    assert sim.chat_requests() == []
    line = r.err.strip().splitlines()[-1]
    assert "plus --max-tokens 8192 needs" in line and "with a context of 8192" in line
    assert "OLLAMA_CONTEXT_LENGTH=16384 ollama serve" in line
    assert "PARAMETER num_ctx 16384" in line and "--allow-truncated-prompt" in line
    assert "nothing was sent" in line
    assert files_under(repo / "reviews") == []


def test_the_refusal_names_split_and_split_reviews_the_same_context_in_parts(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    big_spec(repo)
    sim = make_simulator(context_window=4096, preloaded=True)
    refused = run_big(cli, sim, "--max-tokens", "1024")
    assert refused.code == 14, refused.err
    assert "review it in parts that fit (--split)" in refused.err.strip().splitlines()[-1]
    r = run_big(cli, sim, "--max-tokens", "1024", "--split")
    assert r.code == 0, r.err
    assert len(sim.chat_requests()) >= 3  # two parts at least, and the synthesis
    assert len(list((repo / "reviews").glob("*.split.json"))) == 1


def test_a_prompt_that_fits_the_loaded_context_is_sent(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    big_spec(repo)
    sim = make_simulator(context_window=32768, preloaded=True)
    r = run_big(cli, sim)
    assert r.code == 0, r.err
    assert len(sim.chat_requests()) == 1
    assert api_paths(sim) == ["/api/version", "/api/show", "/api/ps"]


def test_a_lower_max_tokens_makes_the_same_prompt_fit(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    big_spec(repo)
    sim = make_simulator(context_window=8192, preloaded=True)
    r = run_big(cli, sim, "--max-tokens", "1000")
    assert r.code == 0, r.err


def test_allow_truncated_prompt_sends_it_anyway_with_a_warning(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    big_spec(repo)
    sim = make_simulator(context_window=2048, preloaded=True)
    r = run_big(cli, sim, "--allow-truncated-prompt")
    assert r.code == 0, r.err
    assert "with a context of 2048" in r.err and "sent anyway" in r.err
    assert len(sim.chat_requests()) == 1


def test_a_model_not_loaded_is_not_guessed_at_and_the_answer_check_remains(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    big_spec(repo)
    sim = make_simulator(context_window=2048)  # loads on the first chat: nothing to compare
    r = run_big(cli, sim)
    assert r.code == 7, r.err  # the silent clipping is still caught after the answer
    assert "kept only 2048 prompt tokens" in r.err
    assert len(sim.chat_requests()) == 1


def test_a_prompt_over_the_models_trained_context_says_so(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    big_spec(repo)
    sim = make_simulator(model_context_length=8192, preloaded=True)
    r = run_big(cli, sim)
    assert r.code == 14
    assert "the model was trained for 8192 tokens: review it in parts that fit (--split)" in r.err
    assert "OLLAMA_CONTEXT_LENGTH" not in r.err


@pytest.mark.parametrize("server", ["llama.cpp", "vllm", "deepseek"])
def test_a_server_declared_as_another_kind_is_not_asked(
    repo: Path, make_simulator: MakeSim, cli: Any, server: str
) -> None:
    sim = make_simulator(context_window=2048, preloaded=True)
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", sim.base_url,
            "--server", server)  # fmt: skip
    assert r.code == 0, r.err
    assert api_paths(sim) == []


def test_a_server_without_ollamas_api_is_skipped_quietly(
    repo: Path, make_stub: Any, cli: Any
) -> None:
    from tests.support.stubs import Reply

    ok = b'{"choices":[{"message":{"content":"Fine.\\n\\nEND-OF-REVIEW"},"finish_reason":"stop"}]}'
    stub = make_stub([Reply(200, ok)])
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", stub.base_url,
            "--no-stream")  # fmt: skip
    assert r.code == 0, r.err
    assert "Ollama" not in r.err and "not loaded" not in r.err  # no word about the probe
    assert len(stub.seen) == 1  # the stub answers POSTs only: the probe's GET got a 501


def test_a_batch_asks_the_server_once_per_endpoint_and_model(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    from tests.support.batch import batch, manifest

    sim = make_simulator(context_window=65536, preloaded=True, answer_words=20)
    manifest(repo, ["a", "b", "c", "d"])
    r = batch(cli, sim, "--jobs", "3")
    assert r.code == 0, r.err
    assert api_paths(sim) == ["/api/version", "/api/show", "/api/ps"]
    assert len(sim.chat_requests()) == 4


def test_a_batch_entry_that_does_not_fit_fails_before_sending(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    from tests.support.batch import batch, manifest

    big_spec(repo)
    sim = make_simulator(context_window=12288, preloaded=True, answer_words=20)
    manifest(repo, ["small", "big"], per_entry={"big": {"context": ["docs/big.md"]}})
    r = batch(cli, sim, "--max-file-bytes", "1000000")
    assert r.code == 11, r.err
    big = next(e for e in r.json()["entries"] if e["topic"] == "big")
    assert big["status"] == "failed" and "OLLAMA_CONTEXT_LENGTH=16384" in big["error"]
    assert len(sim.chat_requests()) == 1  # the small one only


def test_context_steps_are_few_and_fixed() -> None:
    assert [step_for(n) for n in (1, 4096, 4097, 14204, 262144)] == [
        4096, 4096, 8192, 16384, 262144,
    ]  # fmt: skip
    assert step_for(300_000) == 327_680


def test_ollama_com_is_not_asked_and_says_it_runs_models_at_full_context(
    repo: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx

    urls: list[str] = []

    def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> Any:
        urls.append(str(request.url))
        raise httpx.ConnectError("blocked by the test", request=request)

    monkeypatch.setattr(httpx.Client, "send", send)
    monkeypatch.setenv("OLLAMA_API_KEY", "k-test")
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", "ollama.com",
            "--max-attempts", "1")  # fmt: skip
    assert r.code == 5
    assert urls == ["https://ollama.com/v1/chat/completions"]
    assert "ollama.com runs models at their full context" in r.err


def test_a_continuation_that_would_not_fit_is_refused_before_sending(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    big_spec(repo)
    sim = make_simulator(context_window=100_000, answer_words=60)
    first = run_big(cli, sim, "--max-tokens", "20", "--max-continuations", "0")
    assert first.code == 4
    sim.load("deepseek-v4-flash", 4096)  # the server restarted with a smaller context
    sent = len(sim.chat_requests())
    r = cli("continue", first.json()["segments"][0]["answer_path"], "--endpoint", sim.base_url)
    assert r.code == 14, r.err
    assert "with a context of 4096" in r.err
    assert len(sim.chat_requests()) == sent
    assert len(files_under(repo / "reviews")) == 3  # the primary's answer, record, receipt
