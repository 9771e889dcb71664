"""``run --dry-run`` refuses what ``run`` refuses before sending (issue 30, item 11): the
Ollama pre-flight (can the model think at the level asked, does the prompt fit the context
the server runs it with) is asked by the dry run too, through the server's metadata
endpoints only; its chat endpoint never sees a request."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review import api
from deepseek_review.errors import ConfigError, PromptDoesNotFit
from deepseek_review.testing.simulator import Simulator
from tests.support.cli import files_under
from tests.support.prompt import big_spec

MakeSim = Callable[..., Simulator]
METADATA = ["/api/version", "/api/show", "/api/ps"]


def api_paths(sim: Simulator) -> list[str]:
    return [r.path for r in sim.requests if r.path.startswith("/api/")]


def last_line(err: str) -> str:
    return err.strip().splitlines()[-1]


#: Each pre-flight refusal: the simulator it needs, the command's extra flags, exit code, and
#: words of the message.
REFUSALS: dict[str, tuple[dict[str, Any], list[str], int, str]] = {
    "reasoning-on-a-model-that-does-not-think": (
        {"reasoning_words": 0},
        ["-c", "docs/spec.md", "--reasoning", "high"],
        2,
        "--reasoning high:",
    ),
    "max-reasoning-on-a-model-that-does-not-think": (
        {"reasoning_words": 0},
        ["-c", "docs/spec.md", "--reasoning", "max", "--no-stream"],
        2,
        "does not think",
    ),
    "prompt-over-the-loaded-context": (
        {"context_window": 8192, "preloaded": True},
        ["-c", "docs/big.md", "--max-file-bytes", "1000000"],
        14,
        "with a context of 8192",
    ),
    "prompt-over-the-trained-context": (
        {"model_context_length": 8192, "preloaded": True},
        ["-c", "docs/big.md", "--max-file-bytes", "1000000"],
        14,
        "the model was trained for 8192 tokens",
    ),
    "prompt-over-the-trained-context-natively": (
        {"model_context_length": 8192, "preloaded": True},
        ["-c", "docs/big.md", "--max-file-bytes", "1000000", "--api", "ollama"],
        14,
        "the model was trained for 8192 tokens",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_the_dry_run_refuses_what_the_run_refuses_before_sending(
    repo: Path, make_simulator: MakeSim, cli: Any, case: str
) -> None:
    big_spec(repo)
    sim_options, extra, code, words = REFUSALS[case]
    sim = make_simulator(**sim_options)
    args = ["run", "-p", "Check.", "--endpoint", sim.base_url, *extra]
    dry = cli(*args, "--dry-run")
    real = cli(*args)
    assert (dry.code, real.code) == (code, code), dry.err + real.err
    assert last_line(dry.err) == last_line(real.err)
    assert words in last_line(dry.err)
    assert sim.chat_requests() == []
    assert files_under(repo / "reviews") == []


def test_the_dry_run_with_json_reports_the_refusal_as_its_error_object(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(reasoning_words=0)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url,
            "--reasoning", "low", "--dry-run", "--json")  # fmt: skip
    assert r.code == 2
    assert r.json()["error"]["kind"] == "ConfigError"
    assert "does not think" in r.json()["error"]["message"]
    assert sim.chat_requests() == []


def _set_reasoning_high(repo: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> str:
    """``reasoning = high`` from the environment or the repository's config: how an error
    names where it was set."""
    if source == "env":
        monkeypatch.setenv("DEEPSEEK_REVIEW_REASONING", "high")
        return "DEEPSEEK_REVIEW_REASONING"
    (repo / ".deepseek-review.toml").write_text('reasoning = "high"\n')
    return ".deepseek-review.toml reasoning"


@pytest.mark.parametrize(
    "source",
    ["env", "config"],
)
def test_a_dry_run_refusal_names_where_the_level_was_set(
    repo: Path, make_simulator: MakeSim, cli: Any, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    sim = make_simulator(reasoning_words=0)
    name = _set_reasoning_high(repo, monkeypatch, source)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url, "--dry-run")
    assert r.code == 2
    assert last_line(r.err).startswith(f"deepseek-review: error: {name} high: ")
    assert sim.chat_requests() == []


def test_a_dry_run_that_passes_asks_only_the_metadata_endpoints(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    sim = make_simulator(context_window=32768, preloaded=True, reasoning_words=3)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url,
            "--reasoning", "high", "--dry-run")  # fmt: skip
    assert r.code == 0, r.err
    assert api_paths(sim) == METADATA
    assert [x.path for x in sim.requests if not x.path.startswith("/api/")] == []


def test_a_dry_run_with_allow_truncated_prompt_warns_as_the_run_would(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    big_spec(repo)
    sim = make_simulator(context_window=2048, preloaded=True)
    r = cli("run", "-c", "docs/big.md", "--max-file-bytes", "1000000", "-p", "x",
            "--endpoint", sim.base_url, "--allow-truncated-prompt", "--dry-run")  # fmt: skip
    assert r.code == 0, r.err
    assert "with a context of 2048" in r.err and "sent anyway" in r.err
    assert sim.chat_requests() == []


#: What a dry run may ask a server of each kind that is not Ollama: its tokenizer only.
TOKENIZER_PATHS = {
    "llama.cpp": {"/apply-template", "/tokenize", "/extras/tokenize/count"},
    "vllm": {"/tokenize"},
    "deepseek": set(),
}


@pytest.mark.parametrize("server", ["llama.cpp", "vllm", "deepseek"])
def test_a_dry_run_asks_a_server_declared_as_another_kind_at_most_its_tokenizer(
    repo: Path, make_simulator: MakeSim, cli: Any, server: str
) -> None:
    sim = make_simulator(reasoning_words=0, context_window=2048, preloaded=True)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url,
            "--server", server, "--reasoning", "high", "--dry-run")  # fmt: skip
    assert r.code == 0, r.err
    assert {x.path for x in sim.requests} <= TOKENIZER_PATHS[server]


def test_the_library_plan_asks_the_server_only_when_told(
    repo: Path, make_simulator: MakeSim
) -> None:
    big_spec(repo)
    sim = make_simulator(context_window=8192, preloaded=True, reasoning_words=0)
    options: dict[str, Any] = {"context": "docs/big.md", "prompt": "x", "endpoint": sim.base_url,
                               "max_file_bytes": 1_000_000}  # fmt: skip
    api.plan_review(**options, reasoning="high")
    assert sim.requests == []
    with pytest.raises(ConfigError, match=r"reasoning high: .* does not think"):
        api.plan_review(**options, reasoning="high", ask_server=True)
    with pytest.raises(PromptDoesNotFit):
        api.plan_review(**options, ask_server=True)
    assert sim.chat_requests() == []


def test_the_run_names_where_the_level_was_set_as_the_dry_run_does(
    repo: Path, make_simulator: MakeSim, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = make_simulator(reasoning_words=0)
    monkeypatch.setenv("DEEPSEEK_REVIEW_REASONING", "high")
    args = ["run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url]
    dry, real = cli(*args, "--dry-run"), cli(*args)
    assert (dry.code, real.code) == (2, 2)
    assert last_line(real.err) == last_line(dry.err)
    assert last_line(real.err).startswith("deepseek-review: error: DEEPSEEK_REVIEW_REASONING high:")
    assert sim.chat_requests() == []


# --------------------------------------------------------------------------- batch


def test_a_batch_dry_run_refuses_the_entries_the_batch_would_fail_before_sending(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    from tests.support.batch import batch, manifest

    big_spec(repo)
    sim = make_simulator(context_window=12288, preloaded=True, answer_words=20)
    manifest(repo, ["small", "big"], per_entry={"big": {"context": ["docs/big.md"]}})
    dry = batch(cli, sim, "--max-file-bytes", "1000000", "--dry-run")
    assert sim.chat_requests() == []
    assert api_paths(sim) == METADATA  # once per endpoint and model, as the run asks
    real = batch(cli, sim, "--max-file-bytes", "1000000")
    assert (dry.code, real.code) == (11, 11)
    refused = {e["topic"]: e["refused"] for e in dry.json()["entries"]}
    failed = {e["topic"]: e["error"] for e in real.json()["entries"] if e["status"] == "failed"}
    assert refused == {"small": None, **failed}
    assert "OLLAMA_CONTEXT_LENGTH=16384" in refused["big"]
    assert "dry run: 1 entry would fail before sending; first: big: " in last_line(dry.err)


def test_a_batch_dry_run_text_marks_the_refused_entry(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    from tests.support.batch import manifest

    sim = make_simulator(reasoning_words=0)
    manifest(repo, ["plain", "thinks"], per_entry={"thinks": {"reasoning": "high"}})
    r = cli("batch", "reviews.toml", "--endpoint", sim.base_url, "--dry-run")
    assert r.code == 11
    lines = r.out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("new       thinks"))
    assert lines[at + 1].lstrip().startswith("refused: reasoning (entry 2, line")
    assert "does not think" in lines[at + 1]
    assert not any("refused" in x for x in lines[:at])
    assert sim.chat_requests() == []


def test_a_batch_dry_run_that_passes_exits_0_and_asks_only_metadata(
    repo: Path, make_simulator: MakeSim, cli: Any
) -> None:
    from tests.support.batch import batch, manifest

    sim = make_simulator(context_window=65536, preloaded=True)
    manifest(repo, ["a", "b", "c"])
    r = batch(cli, sim, "--dry-run")
    assert r.code == 0, r.err
    assert [e["refused"] for e in r.json()["entries"]] == [None, None, None]
    assert api_paths(sim) == METADATA
    assert sim.chat_requests() == []


def test_a_dry_run_checks_the_signing_key_as_the_run_does(
    repo: Path, make_simulator: MakeSim, cli: Any, tmp_path: Path
) -> None:
    sim = make_simulator()
    args = ["run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url, "--sign",
            "--signing-key", str(tmp_path / "nope")]  # fmt: skip
    dry, real = cli(*args, "--dry-run"), cli(*args)
    assert (dry.code, real.code) == (2, 2)
    assert last_line(dry.err) == last_line(real.err)
    assert sim.chat_requests() == []


@pytest.mark.parametrize("source", ["env", "config"])
def test_a_batch_and_its_dry_run_name_where_a_refused_level_was_set(
    repo: Path, make_simulator: MakeSim, cli: Any, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    from tests.support.batch import batch, manifest

    sim = make_simulator(reasoning_words=0)
    name = _set_reasoning_high(repo, monkeypatch, source)
    manifest(repo, ["a"])
    dry, real = batch(cli, sim, "--dry-run"), batch(cli, sim)
    assert (dry.code, real.code) == (11, 11)
    (refused,) = [e["refused"] for e in dry.json()["entries"]]
    (error,) = [e["error"] for e in real.json()["entries"]]
    assert refused == error
    assert error.startswith(f"{name} high: ")
    assert sim.chat_requests() == []
