"""The cutter a planner of parts calls (:func:`context.ranges.cut_lines`): a file too big for
one request cut into ranges of at most N estimated tokens, where a reader would cut, and each
range made a context file (:func:`context.ranges.file_range`) that frames and records exactly."""

from __future__ import annotations

import itertools

import pytest

from deepseek_review.chat.tokens import bytes_as_tokens
from deepseek_review.context.ranges import Cut, cut_lines, file_range
from deepseek_review.context.types import ContextFile, LineRange
from deepseek_review.errors import InputError
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.lines import line_count, line_slice


def function(name: str, body_lines: int) -> str:
    body = "".join(f"    v{i} = {i} * 2  # a line of the body\n" for i in range(body_lines))
    return f"def {name}():\n{body}    return 0\n"


def python_file(n: int = 12, body_lines: int = 8) -> str:
    header = '"""A module."""\n\nimport os\n\n\n'
    return header + "\n\n".join(function(f"f{i}", body_lines) for i in range(n))


def starts(text: str, cuts: list[Cut]) -> list[str]:
    lines = text.split("\n")
    return [lines[c.first - 1] for c in cuts]


def assert_covers(text: str, cuts: list[Cut], budget: int) -> None:
    """The ranges follow each other from line 1 to the last, each within the budget (unless
    one line alone is over it), their sizes as their slices'."""
    assert cuts[0].first == 1 and cuts[-1].last == line_count(text)
    for a, b in itertools.pairwise(cuts):
        assert b.first == a.last + 1
    for c in cuts:
        piece = line_slice(text, c.first, c.last)
        assert piece is not None
        size = len(piece.encode("utf-8"))
        assert (c.bytes, c.tokens) == (size, bytes_as_tokens(size))
        assert c.tokens <= budget or c.first == c.last
    assert "".join(line_slice(text, c.first, c.last) or "" for c in cuts) == text


def test_python_is_cut_before_top_level_definitions() -> None:
    text = python_file()
    cuts = cut_lines(text, 120, path="m.py")
    assert len(cuts) > 3
    assert_covers(text, cuts, 120)
    assert all(s.startswith("def f") for s in starts(text, cuts)[1:])


def test_a_body_with_blank_lines_is_cut_before_a_top_level_line_not_an_indented_one() -> None:
    text = python_file(6, 4).replace("    v2 = 2", "\n    v2 = 2")
    cuts = cut_lines(text, 100, path="m.py")
    assert_covers(text, cuts, 100)
    assert all(not s.startswith(" ") for s in starts(text, cuts))


def test_markdown_is_cut_before_headings_the_highest_level_first() -> None:
    para = "Some prose that goes on for a while, as documentation does.\n"
    sections = []
    for i in range(4):
        sections.append(f"# Part {i}\n\n{para * 3}\n")
        for j in range(2):
            sections.append(f"## Section {i}.{j}\n\n{para * 4}\n")
    text = "".join(sections)
    cuts = cut_lines(text, 200, path="docs/guide.md")
    assert_covers(text, cuts, 200)
    heads = starts(text, cuts)
    assert all(h.startswith("#") for h in heads)
    assert sum(h.startswith("# ") for h in heads) >= 3  # level 1 preferred where it fits


def test_a_heading_inside_a_fenced_block_is_no_boundary() -> None:
    para = "Words words words words words words words words words.\n"
    code = "```sh\n" + "".join(f"# step {i}\necho {i}\n" for i in range(30)) + "```\n"
    text = f"# Title\n\n{para * 3}\n{code}\n## After\n\n{para * 3}"
    cuts = cut_lines(text, 200, path="README.md")
    assert_covers(text, cuts, 200)
    assert starts(text, cuts) == ["# Title", "## After"]  # not "# step 20" (a level 1 look-alike)


def test_a_text_without_blank_lines_is_cut_at_line_boundaries_within_the_budget() -> None:
    text = "".join(f"row {i}, {'x' * (i % 17)}\n" for i in range(300))
    cuts = cut_lines(text, 64, path="data.csv")
    assert len(cuts) > 5
    assert_covers(text, cuts, 64)
    assert all(c.tokens * 2 >= 64 for c in cuts[:-1])  # each holds at least half the budget


def test_other_text_is_cut_after_blank_lines() -> None:
    text = "".join(f"  item {i} of a list\n" + ("\n" if i % 5 == 4 else "") for i in range(100))
    cuts = cut_lines(text, 60, path="notes.txt")
    assert_covers(text, cuts, 60)
    lines = text.split("\n")
    assert all(lines[c.first - 2] == "" for c in cuts[1:])


def test_a_line_longer_than_the_budget_is_a_range_of_its_own_never_cut_inside() -> None:
    text = "short\n" + "y" * 1000 + "\nshort again\n"
    cuts = cut_lines(text, 10)
    assert [(c.first, c.last) for c in cuts] == [(1, 1), (2, 2), (3, 3)]
    assert cuts[1].tokens == bytes_as_tokens(1001) > 10


def test_a_last_line_without_a_newline_is_covered() -> None:
    text = "a\n" * 50 + "the end"
    cuts = cut_lines(text, 8)
    assert_covers(text, cuts, 8)


def test_a_text_that_fits_is_one_range_and_an_empty_one_none() -> None:
    text = python_file(2, 2)
    assert cut_lines(text, 10_000, path="m.py") == [
        Cut(1, line_count(text), bytes_as_tokens(len(text)), len(text))
    ]
    assert cut_lines("", 10) == []


def test_multibyte_text_is_counted_in_bytes() -> None:
    text = "".join("λ = 'ünïcødé'\n" for _ in range(40))
    cuts = cut_lines(text, 20)
    assert_covers(text, cuts, 20)


def test_the_same_text_and_budget_always_give_the_same_ranges() -> None:
    text = python_file(30, 5)
    first = cut_lines(text, 150, path="m.py")
    assert len(first) > 3
    assert all(cut_lines(text, 150, path="m.py") == first for _ in range(3))


def test_a_budget_below_one_token_is_refused() -> None:
    with pytest.raises(ValueError, match="max_tokens must be at least 1"):
        cut_lines("x\n", 0)


# --------------------------------------------------------------------------- file_range


def whole(text: str, path: str = "src/m.py") -> ContextFile:
    data = text.encode("utf-8")
    return ContextFile(path, text, sha256_tag(data), len(data))


def test_each_cut_becomes_a_context_file_of_exactly_its_lines() -> None:
    text = python_file()
    f = whole(text)
    parts = [file_range(f, c.first, c.last) for c in cut_lines(text, 120, path=f.path)]
    assert "".join(p.text for p in parts) == text
    for p, c in zip(parts, cut_lines(text, 120, path=f.path), strict=True):
        assert p.lines == LineRange(c.first, c.last, line_count(text))
        assert (p.sha256, p.size) == (sha256_tag(p.text.encode()), c.bytes)
        assert p.whole is f


def test_a_range_of_a_range_is_cut_from_the_whole_file() -> None:
    f = whole("".join(f"{i}\n" for i in range(1, 11)))
    part = file_range(f, 2, 8)
    assert file_range(part, 5, 5).text == "5\n"


def test_a_range_past_the_end_is_refused_naming_it() -> None:
    with pytest.raises(InputError) as exc:
        file_range(whole("a\nb\n"), 2, 3)
    assert exc.value.message == (
        "context path src/m.py#L2-L3: src/m.py has 2 lines; the range ends past its last line"
    )
