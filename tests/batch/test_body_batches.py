"""A body written from many parts a batch at a time (:func:`deepseek_review.records.
canonical._write_streamed`) is the canonical encoding, whether a batch is escaped as one string or,
holding more than a slice, piece by piece; and every file's text is handed over."""

from __future__ import annotations

import pytest

from deepseek_review.records.canonical import BATCH, SLICE
from deepseek_review.reviewing.request import BodyOptions
from tests.support.body import TRICKY, both_ways, file_of


@pytest.fixture(autouse=True)
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("deepseek_review.reviewing.request.STREAM_ABOVE", 0)


def test_many_small_files_are_written_as_the_canonical_encoding() -> None:
    files = [file_of(f"src/m{i:04d}.py", f"{TRICKY} {i}\n") for i in range(3 * BATCH)]
    streamed, expected, left = both_ways(files, BodyOptions(model="m"))
    assert streamed == expected and left == {}


def test_batches_over_a_slice_are_written_as_the_canonical_encoding() -> None:
    sizes = [10, SLICE // 3, SLICE + 7, 3, 2 * SLICE]
    files = [
        file_of(f"f{i}.md", (TRICKY * (n // len(TRICKY) + 1))[:n]) for i, n in enumerate(sizes)
    ]
    files += [file_of(f"small{i}.md", f"{TRICKY}{i}") for i in range(BATCH)]
    streamed, expected, left = both_ways(files, BodyOptions(model="m"))
    assert streamed == expected and left == {}
