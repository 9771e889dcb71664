"""The body written straight from the file texts: the same bytes, about one copy of them.

Large context files are read and decoded piece by piece (no file-sized bytes object made and
dropped); what they are refused for, and at which offset, is as for the whole bytes.

The request body is written part by part into one buffer
(:func:`deepseek_review.records.canonical.canonical_json`), never joined into a prompt string
first. These tests pin that the bytes are exactly those of the canonical ``json.dumps``
encoding of the joined messages, and that planning a large context keeps about one copy of it.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.context.gather import ContextFile, ContextLimits
from deepseek_review.context.read import PIECE, read_context_file
from deepseek_review.errors import InputError
from deepseek_review.records.canonical import SLICE, canonical_json, sha256_tag
from deepseek_review.reviewing.plan import ReviewOptions, plan_review
from deepseek_review.reviewing.request import BodyOptions
from tests.support.body import TRICKY, both_ways, file_of


@pytest.fixture(autouse=True, params=["streamed", "one-go"])
def body_writer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with bodies written piece by piece and encoded in one go (small)."""
    if request.param == "streamed":
        monkeypatch.setattr("deepseek_review.reviewing.request.STREAM_ABOVE", 0)
    return str(request.param)


def dumps(obj: Any) -> bytes:
    """The canonical form, spelled with ``json.dumps``."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


@pytest.mark.parametrize("stream", [True, False])
def test_a_body_written_from_parts_is_byte_identical_to_json_dumps_of_the_joined_messages(
    stream: bool,
) -> None:
    files = [file_of("a.md", TRICKY), file_of("b.py", "x = '```'\n" * 3), file_of("c.txt", "")]
    options = BodyOptions(model="m", stream=stream, extra_body={"top_p": 0.5, "zeta": ["é"]})
    streamed, expected, _ = both_ways(files, options)
    assert streamed == expected
    assert streamed == dumps(json.loads(expected))


def test_text_longer_than_a_slice_with_escapes_and_wide_characters_at_the_seams_is_identical():
    # Escapes and 4-byte characters on both sides of every slice boundary.
    seam = '😀"\n\\\x01ü'
    text = "".join(("x" * (SLICE - 3)) + seam for _ in range(4))
    streamed, expected, _ = both_ways([file_of("big.txt", text)], BodyOptions(model="m"))
    assert streamed == expected


def test_the_ollama_native_body_written_from_parts_is_identical_num_ctx_included():
    files = [file_of("a.md", TRICKY * 2000)]
    streamed, expected, _ = both_ways(files, BodyOptions(model="m", api="ollama"))
    assert streamed == expected
    assert json.loads(streamed)["options"]["num_ctx"] > 0


def test_each_file_text_is_handed_over_as_the_body_is_written():
    _, _, left = both_ways([file_of("a.md", "one"), file_of("b.md", "two")], BodyOptions(model="m"))
    assert left == {}


def test_a_lone_surrogate_in_the_prompt_is_refused_as_by_the_canonical_encoder():
    with pytest.raises(UnicodeEncodeError):
        dumps({"content": "bad \udcff"})
    with pytest.raises(UnicodeEncodeError):
        both_ways([file_of("a.md", "fine")], BodyOptions(model="m"), prompt="bad \udcff")


def test_values_that_hold_no_large_text_are_left_to_the_encoder_unchanged():
    obj = {"b": [1, 2.5, None, True], "a": {"z": "é", "y": []}, "c": "x" * (SLICE + 1)}
    assert canonical_json(obj) == dumps(obj)


def test_planning_a_large_context_holds_about_one_copy_of_the_body(repo: Path) -> None:
    (repo / "ctx").mkdir()
    line = "The quick brown fox jumps over the lazy dog; 2 and 3 make 5.\n"
    for i in range(4):
        (repo / "ctx" / f"part{i}.md").write_text(line * 8000, encoding="utf-8")
    options = ReviewOptions(
        context=("ctx",),
        prompt="Review.",
        endpoint="http://127.0.0.1:9/v1",
        limits=ContextLimits(max_file_bytes=4_000_000, max_context_bytes=8_000_000),
    )
    plan_review(options)  # imports and caches first: only the planning itself is measured
    tracemalloc.start()
    try:
        plan = plan_review(options)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    body = len(plan.prepared.body_bytes)
    assert body > 1_900_000
    assert peak < 1.6 * body, f"peak {peak / body:.2f}x the body"
    assert held < 1.1 * body, f"held {held / body:.2f}x the body"


def test_a_continuation_repeats_the_primary_messages_exactly(repo: Path, make_simulator, cli):
    (repo / "docs" / "tricky.md").write_text(TRICKY, encoding="utf-8")
    sim = make_simulator(answer_words=30)
    r = cli(
        "run", "-c", "docs", "-p", "Check ✓.", "--endpoint", sim.base_url,
        "--max-tokens", "20", "--json",
    )  # fmt: skip
    assert r.code == 0, r.err
    first, second = (json.loads(req.body)["messages"] for req in sim.chat_requests()[:2])
    assert second[: len(first)] == first
    assert len(second) > len(first)


# ------------------------------------------------------------ large files read in pieces


def read_big(repo: Path, data: bytes) -> ContextFile:
    (repo / "big.txt").write_bytes(data)
    got = read_context_file(repo, "big.txt", explicit=True, max_file_bytes=len(data) + 10)
    assert isinstance(got, ContextFile)
    return got


def refusal(repo: Path, data: bytes) -> str:
    with pytest.raises(InputError) as caught:
        read_big(repo, data)
    return str(caught.value)


def test_a_file_larger_than_a_piece_is_read_whole_with_its_hash_and_size(repo: Path):
    # A 4-byte character split across every piece boundary.
    data = ("x" * (PIECE - 2) + "😀").encode("utf-8") * 5
    got = read_big(repo, data)
    assert got.text == data.decode("utf-8")
    assert (got.sha256, got.size) == (sha256_tag(data), len(data))


def test_an_invalid_byte_past_the_first_piece_is_named_at_its_offset_in_the_file(repo: Path):
    data = b"a" * (PIECE * 2 + 5) + b"\xff" + b"b" * 10
    assert (
        refusal(repo, data)
        == f"context file big.txt: not UTF-8 (invalid byte at offset {PIECE * 2 + 5})"
    )


def test_a_character_cut_by_a_piece_boundary_then_broken_is_named_where_it_starts(repo: Path):
    data = b"a" * (PIECE - 1) + b"\xe2\x82" + b"A" * 10  # the sequence starts in piece one
    assert refusal(repo, data).endswith(f"(invalid byte at offset {PIECE - 1})")


def test_a_character_cut_off_by_the_end_of_a_large_file_is_named(repo: Path):
    data = b"a" * (PIECE + 7) + b"\xf0\x9f"
    assert refusal(repo, data).endswith(f"(invalid byte at offset {PIECE + 7})")


def test_a_nul_after_an_invalid_byte_makes_a_large_file_binary_as_for_a_small_one(repo: Path):
    data = b"\xff" + b"a" * (PIECE * 2) + b"\0"
    assert refusal(repo, data).endswith(f"binary (NUL byte at offset {PIECE * 2 + 1})")
