"""A change cut at file and hunk boundaries (``run --split`` of a change), on real commits."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepseek_review.context.git_hunks import file_changes, select
from deepseek_review.context.git_plan import frame_diff
from deepseek_review.errors import InputError
from deepseek_review.git.diff import Diff, DiffSettings, Range, make_diff
from tests.support.git import commit


def _text(changed: set[int]) -> str:
    return "".join(f"line {i} {'new' if i in changed else 'old'}\n" for i in range(100))


@pytest.fixture
def diff(repo: Path) -> Diff:
    """Two files changed: a.txt in four hunks, b.txt in one."""
    a = commit(repo, "base", {"a.txt": _text(set()), "b.txt": _text(set())})
    b = commit(repo, "change", {"a.txt": _text({10, 35, 60, 85}), "b.txt": _text({50})})
    return make_diff(repo, Range(a, b), DiffSettings(), lambda _c: lambda _ch, _bin: None)


def test_a_files_header_and_hunks_are_its_section_of_the_patch(diff: Diff) -> None:
    changes = file_changes(diff)
    assert [(fc.path, len(fc.hunks)) for fc in changes] == [("a.txt", 4), ("b.txt", 1)]
    assert "".join(fc.text for fc in changes) == diff.text
    assert all(h.startswith("@@ ") for fc in changes for h in fc.hunks)


def test_a_run_of_hunks_keeps_only_those_hunks_whole(diff: Diff) -> None:
    part = select(diff, {"a.txt": [(2, 3)]})
    (a,) = file_changes(part)
    whole = file_changes(diff)[0]
    assert a.hunks == whole.hunks[1:3]
    assert [c.path for c in part.shown] == ["a.txt"]
    assert part.hunks == (("a.txt", 2, 3, 4),)


def test_the_frame_of_a_part_names_the_hunks_it_shows(diff: Diff) -> None:
    framed = frame_diff(select(diff, {"a.txt": [(4, 4)], "b.txt": []}))
    assert "Of a.txt only hunk 4 of 4 is shown here.\n" in framed
    assert "line 85 new" in framed and "line 10 new" not in framed and "line 50 new" in framed


def test_a_run_the_file_does_not_have_is_refused(diff: Diff) -> None:
    with pytest.raises(InputError, match=r"a\.txt: its change has no hunks 3-5"):
        select(diff, {"a.txt": [(3, 5)]})
