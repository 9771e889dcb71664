"""The naming table: the one definition of the files a segment owns, and its inverse."""

from __future__ import annotations

from typing import Any

import pytest

from deepseek_review.records.naming import (
    SEGMENT_FILES,
    longest_name,
    orphan_files,
    resume_checked,
    segment_files,
    sibling,
    split_name,
)
from tests.support.cli import review

STEM = "reviews/spec_deepseek_deepseek-v4-flash_continuation_20260512T033551Z-2"


@pytest.mark.parametrize(
    ("suffix", "kind"),
    [(".md", "answer"), (".receipt.json", "receipt"), (".request.json", "record"),
     (".reasoning.md", "reasoning")],
)  # fmt: skip
def test_every_file_of_a_segment_gives_back_its_stem_and_kind(suffix: str, kind: str) -> None:
    assert split_name(STEM + suffix) == (STEM, kind)
    assert segment_files(STEM)[kind] == STEM + suffix


def test_a_reasoning_file_is_not_taken_for_an_answer() -> None:
    assert split_name("x.reasoning.md") == ("x", "reasoning")


@pytest.mark.parametrize("name", ["notes.txt", ".md", "x.receipt.json.bak", "x.json"])
def test_a_name_that_no_segment_owns_has_no_stem_and_no_sibling(name: str) -> None:
    assert split_name(name) is None
    with pytest.raises(ValueError, match="not a segment file name"):
        sibling(name, "receipt")


def test_sibling_maps_any_file_of_a_segment_to_another_of_the_same_stem() -> None:
    assert sibling(STEM + ".receipt.json", "record") == STEM + ".request.json"
    assert sibling(STEM + ".reasoning.md", "answer") == STEM + ".md"
    assert sibling(STEM + ".md", "receipt") == STEM + ".receipt.json"


def test_the_table_lists_the_answer_first_and_every_suffix_once() -> None:
    assert SEGMENT_FILES[0].kind == "answer"
    suffixes = [f.suffix for f in SEGMENT_FILES]
    assert len(set(suffixes)) == len(suffixes)


def test_resume_from_checks_answer_receipt_and_record_but_not_reasoning() -> None:
    assert resume_checked("s") == [
        "s.md", "s.receipt.json", "s.request.json", "s.findings.json", "s.intoto.json",
        "s.intoto.json.sig",
    ]  # fmt: skip


def test_orphan_files_are_the_files_of_each_segment_without_receipt_answer_first() -> None:
    names = {
        "a_deepseek_m_20260101T000000Z.md",
        "a_deepseek_m_20260101T000000Z.reasoning.md",
        "a_deepseek_m_20260101T000000Z.request.json",
        "b_deepseek_m_20260101T000000Z.md",
        "b_deepseek_m_20260101T000000Z.receipt.json",
        "notes.md",
    }
    assert orphan_files(names) == [
        "a_deepseek_m_20260101T000000Z.md",
        "a_deepseek_m_20260101T000000Z.request.json",
        "a_deepseek_m_20260101T000000Z.reasoning.md",
    ]


def test_the_longest_name_a_review_writes_ends_in_the_longest_suffix() -> None:
    name = longest_name("t", [("m", True), ("m", False)])
    suffix = name.removeprefix("t_deepseek_m_continuation_20000101T000000Z-9999")
    assert suffix in {f.suffix for f in SEGMENT_FILES}
    assert len(suffix) == max(len(f.suffix) for f in SEGMENT_FILES)


def test_verify_lists_a_long_chain_in_chain_order(repo: Any, make_simulator: Any, cli: Any) -> None:
    sim = make_simulator(answer_words=130)
    r = review(cli, sim, "--max-tokens", "10", "--max-continuations", "12")
    segs = [s["receipt_path"] for s in r.json()["segments"]]
    assert len(segs) >= 12  # stems -2 ... -12: string order would put -10 before -2
    listed = [x["receipt_path"] for x in cli("verify", "--json").json()["receipts"]]
    assert listed == segs
