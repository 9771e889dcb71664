"""Planning a split review (:mod:`deepseek_review.reviewing.split`): pure and deterministic."""

from __future__ import annotations

import hashlib
import random
from itertools import pairwise

import pytest

from deepseek_review.context.types import ContextFile
from deepseek_review.reviewing.split import (
    NOTE_MAX_BYTES,
    NotReviewed,
    SplitPlan,
    groups_of,
    part_note,
    plan_parts,
    subject_of,
)


def _file(path: str, nbytes: int) -> ContextFile:
    text = ("word " * (nbytes // 5 + 1))[:nbytes]
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return ContextFile(path, text, digest, len(text.encode()))


def _plan(files: list[ContextFile], window: int = 8192, **kw: object) -> SplitPlan:
    args: dict[str, object] = {"max_tokens": 1024, "margin": 800, "base_tokens": 700, **kw}
    return plan_parts(files, window=window, **args)  # type: ignore[arg-type]


def _where(plan: SplitPlan) -> dict[str, int]:
    return {f.path: p.number for p in plan.parts for f in p.files}


@pytest.mark.parametrize(
    ("path", "subject"),
    [
        ("tests/test_x.py", "x.py"),
        ("x_test.go", "x.go"),
        ("src/x.test.ts", "x.ts"),
        ("spec/x_spec.rb", "x.rb"),
        ("src/x.py", None),
        ("Makefile", None),
    ],
)
def test_a_test_file_is_named_for_what_it_tests(path, subject):
    assert subject_of(path) == subject


def test_a_test_joins_the_folder_of_the_file_it_tests():
    files = [_file("src/pkg/x.py", 100), _file("tests/test_x.py", 100), _file("src/y.py", 100)]
    groups = [[f.path for f in g] for g in groups_of(files)]
    assert ["src/pkg/x.py", "tests/test_x.py"] in groups


def test_a_test_whose_name_matches_several_files_stays_in_its_folder():
    files = [_file("a/x.py", 100), _file("b/x.py", 100), _file("tests/test_x.py", 100)]
    groups = [[f.path for f in g] for g in groups_of(files)]
    assert ["tests/test_x.py"] in groups


def test_a_test_lands_in_the_part_of_the_file_it_tests():
    files = [_file(f"a/f{i}.py", 4000) for i in range(12)]
    files += [_file("b/mod.py", 4000), _file("tests/test_mod.py", 4000)]
    plan = _plan(files)
    assert _where(plan)["tests/test_mod.py"] == _where(plan)["b/mod.py"]


def test_a_folder_that_fits_a_part_is_not_cut():
    files = [_file(f"a/f{i}.py", 3000) for i in range(5)] + [
        _file(f"b/g{i}.py", 3000) for i in range(5)
    ]
    plan = _plan(files)
    assert len({_where(plan)[f"b/g{i}.py"] for i in range(5)}) == 1


def test_every_part_fits_the_room_the_window_leaves():
    files = [_file(f"d{i % 7}/f{i}.txt", 500 + 97 * i) for i in range(60)]
    plan = _plan(files)
    assert len(plan.parts) > 1
    assert all(plan.part_tokens(p) <= plan.part_cap for p in plan.parts)
    assert plan.part_cap == 8192 - 1024 - 800


def test_every_file_is_in_exactly_one_part_or_not_reviewed():
    files = [_file(f"d{i % 5}/f{i}.txt", 300 * i) for i in range(40)]
    earlier = [NotReviewed("img.png", "binary")]
    plan = _plan(files, not_reviewed=earlier)
    placed = [f.path for p in plan.parts for f in p.files]
    left = [n.path for n in plan.not_reviewed]
    assert sorted(placed + left) == sorted([f.path for f in files] + ["img.png"])
    assert len(placed) == len(set(placed))


def test_a_file_whose_one_line_is_larger_than_a_part_is_listed_as_not_reviewed():
    plan = _plan([_file("big.md", 48_000), _file("small.md", 100)])
    (left,) = plan.not_reviewed
    assert left.path == "big.md"
    assert left.reason.startswith("a line of it alone is larger than one part (the file is about")
    assert [f.path for p in plan.parts for f in p.files] == ["small.md"]


def test_a_file_larger_than_a_part_is_cut_at_blank_lines_into_ranges_in_order():
    text = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(3000))
    big = ContextFile("src/big.py", text, "sha256:" + "0" * 64, len(text))
    plan = _plan([big])
    spans = [f.lines or (0, 0) for p in plan.parts for f in p.files]
    assert len(plan.parts) >= 3 and plan.not_reviewed == ()
    assert spans[0][0] == 1 and spans[-1][1] == 9000
    assert all(b[0] == a[1] + 1 for a, b in pairwise(spans))
    lines = text.split("\n")
    assert all(lines[s[0] - 1].startswith("def ") for s in spans)
    assert all(plan.part_tokens(p) <= plan.part_cap for p in plan.parts)


def test_the_same_files_in_any_order_give_the_same_plan():
    files = [_file(f"d{i % 4}/f{i}.txt", 200 + 131 * i) for i in range(50)]
    shuffled = files[:]
    random.Random(7).shuffle(shuffled)
    assert _plan(files) == _plan(shuffled)


def test_a_smaller_window_makes_more_parts():
    files = [_file(f"d/f{i}.txt", 2000) for i in range(30)]
    assert len(_plan(files, window=8192).parts) < len(_plan(files, window=4096).parts)


def test_the_note_names_the_part_and_what_the_others_cover():
    files = [_file(f"a/f{i}.py", 4000) for i in range(6)] + [_file("b/g.py", 4000)]
    plan = _plan(files)
    note = part_note(plan, plan.parts[0])
    n = len(plan.parts)
    assert note.startswith(f"This is part 1 of {n} ")
    assert f"- part {n}: " in note and "b/g.py" in note
    assert "- part 1:" not in note


def test_the_note_stays_within_its_room_however_many_parts():
    files = [_file(f"folder{i:04d}/f.py", 6000) for i in range(400)]
    plan = _plan(files)
    assert len(part_note(plan, plan.parts[0]).encode()) <= NOTE_MAX_BYTES
