"""Prefix caching on a real server: five questions about the same files, on llama-cpp-python.

Its server keeps the KV cache of the last prompt and re-evaluates only what differs from it
(``Llama.generate: N prefix-match hit``); it reports no cache counts in its replies (no
``timings``, no ``prompt_tokens_details``), so the tokens it evaluated are read from its own
log (``llama_perf_context_print: prompt eval time = ... / N tokens``, one line per request,
with ``--verbose True``). The tiny model's vocabulary is one token per character, so the
~3,000 characters of files here are ~3,000 tokens. The issue's figure: the same five reviews
evaluate at most 1.5x the prompt tokens of one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.contract.conftest import MODEL, LlamaServer, serve
from tests.contract.test_llamacpp_contract import cli, make_repo

pytestmark = [pytest.mark.contract, pytest.mark.xdist_group("llama-server")]

QUESTIONS = (
    "Is the mean computed right?",
    "Are errors handled?",
    "Are the names clear?",
    "What tests are missing?",
    "Is the spec consistent with the code?",
)
_EVALUATED = re.compile(r"prompt eval time =\s+[\d.]+ ms /\s+(\d+) tokens")


@pytest.fixture(scope="module")
def verbose_server(
    tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    """A server of its own that logs what it evaluates, with room for the five prompts."""
    with serve(tiny_model, tmp_path_factory.mktemp("llama-verbose"), n_ctx=8192, verbose=True) as s:
        yield s


def evaluated(log: Path) -> list[int]:
    """The prompt tokens the server evaluated, per request, in order."""
    return [int(n) for n in _EVALUATED.findall(log.read_text(encoding="utf-8", errors="replace"))]


def test_five_questions_about_the_same_files_evaluate_at_most_1_5x_the_prompt_of_one(
    verbose_server: LlamaServer, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path)
    for i in range(3):
        (repo / "docs" / f"part{i}.md").write_text(
            f"Section {i}: the mean is the sum over n.\n" * 25
        )
    before = len(evaluated(verbose_server.log))
    prompts = []
    for i, question in enumerate(QUESTIONS):
        r = cli(repo, "run", "-c", "docs", "-p", question, "--topic", f"q{i}",
                "--endpoint", verbose_server.base_url, "--server", "llama.cpp",
                "--model", MODEL, "--no-stream", "--max-continuations", "0", "--json")  # fmt: skip
        assert r.code == 0, r.err[-2000:]
        prompts.append(r.json()["usage"]["prompt_tokens"])
    counts = evaluated(verbose_server.log)[before:]
    assert len(counts) == len(QUESTIONS)
    assert 2_900 <= prompts[0] <= 5_000  # ~3,000 tokens of files, and the template's words
    assert counts[0] == prompts[0]  # the first is evaluated whole
    assert sum(counts) <= 1.5 * prompts[0], (counts, prompts)
