"""The live progress counts the answer's tokens, estimated from the text received, not the
stream's chunks: a server may send many tokens per chunk (the simulator sends 8), and the line
said "~25 tokens" for a 200-token answer. No server counts tokens before the end, so the number
is labelled as an estimate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import deepseek_review
from deepseek_review import ReviewResult
from deepseek_review.chat.tokens import bytes_as_tokens
from deepseek_review.testing.simulator import Simulator

MakeSim = Callable[..., Simulator]


def _streamed(sim: Simulator, api: str) -> tuple[list[int], str]:
    """The token counts the progress callback was told, and the answer with its reasoning."""
    told: list[int] = []
    result = deepseek_review.review(
        context=["docs/spec.md"], prompt="Check.", endpoint=sim.base_url, api=api,
        keep_reasoning=True, progress=lambda tokens, elapsed: told.append(tokens),
    )  # fmt: skip
    assert isinstance(result, ReviewResult)
    [segment] = result.segments
    reasoning = "" if segment.reasoning_path is None else Path(segment.reasoning_path).read_text()
    return told, result.text + reasoning


@pytest.mark.parametrize("api", ["openai", "ollama"])
@pytest.mark.parametrize("reasoning_words", [0, 40])
def test_progress_reports_the_tokens_of_the_text_received_not_the_chunks(
    repo: Path, make_simulator: MakeSim, api: str, reasoning_words: int
) -> None:
    sim = make_simulator(answer_words=200, reasoning_words=reasoning_words)
    told, text = _streamed(sim, api)
    assert told == sorted(told)
    assert told[-1] == bytes_as_tokens(len(text.encode("utf-8")))
    # 200 words sent 8 to a chunk: a count of chunks would say about 25
    assert told[-1] > 200 and told[-1] > 4 * len(told)


def test_a_multibyte_answer_is_estimated_from_its_bytes(
    repo: Path, make_simulator: MakeSim
) -> None:
    (repo / "docs" / "spec.md").write_text("# Spéc\n\nLa moyenne de 2, 4 et 9 est 5.\n")
    sim = make_simulator(answer_words=60)
    told, text = _streamed(sim, "openai")
    assert told[-1] == bytes_as_tokens(len(text.encode("utf-8")))


def test_the_live_line_labels_the_streamed_count_as_an_estimate() -> None:
    from deepseek_review.cli.progress import _Receiving

    line = _Receiving()
    line(120, 2.0)
    assert line.text() == "  receiving: ~120 tokens (estimated), ~60.0 tokens/s"


def test_the_batch_line_labels_tokens_still_streaming_as_an_estimate() -> None:
    from deepseek_review.batch.report import STATUSES
    from deepseek_review.batch.schedule import Progress
    from deepseek_review.cli.progress import _status

    counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
    snapshot = Progress(total=2, counts=counts, in_flight=1, tokens=0, elapsed=1.0, streaming=57)
    assert "~57 tokens (estimated)" in _status(snapshot)
