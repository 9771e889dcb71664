"""Planning a split review of a change (:mod:`deepseek_review.reviewing.split_diff`): pure,
on changes made here (their headers and hunks as git writes them)."""

from __future__ import annotations

from itertools import pairwise

from deepseek_review.context.git_hunks import FileChange
from deepseek_review.git.patch import Change
from deepseek_review.reviewing.split import SplitPlan
from deepseek_review.reviewing.split_diff import plan_change_parts

WINDOW, MAX_TOKENS, MARGIN, BASE = 4096, 512, 409, 600
ROOM = WINDOW - MAX_TOKENS - MARGIN - BASE


def _hunk(at: int, lines: int) -> str:
    body = "".join(f"+added line {at + i} of a change, in words\n" for i in range(lines))
    return f"@@ -{at},0 +{at},{lines} @@\n{body}"


def _change(path: str, *hunk_lines: int) -> FileChange:
    head = f"diff --git a/{path} b/{path}\nindex 1..2 100644\n--- a/{path}\n+++ b/{path}\n"
    hunks = tuple(_hunk(i * 1000 + 1, n) for i, n in enumerate(hunk_lines))
    return FileChange(Change("M", path, path, "1" * 40, "2" * 40, "100644"), head, hunks)


def _plan(*changes: FileChange) -> SplitPlan:
    return plan_change_parts(
        changes, [], window=WINDOW, max_tokens=MAX_TOKENS, margin=MARGIN, base_tokens=BASE
    )


def test_a_change_that_fits_a_part_is_one_unit_and_not_cut():
    plan = _plan(_change("src/a.py", 5, 5), _change("src/b.py", 5))
    assert [[(f.path, f.hunks) for f in p.files] for p in plan.parts] == [
        [("src/a.py", None), ("src/b.py", None)]
    ]


def test_a_change_larger_than_a_part_is_cut_into_runs_of_whole_hunks_in_order():
    plan = _plan(_change("docs/big.md", *[30] * 12))
    runs = [f.hunks for p in plan.parts for f in p.files]
    assert len(runs) >= 2
    assert runs[0] is not None and runs[0][0] == 1 and runs[-1] is not None and runs[-1][1] == 12
    assert all(a is not None and b is not None and b[0] == a[1] + 1 for a, b in pairwise(runs))
    assert all(p.tokens <= ROOM for p in plan.parts)


def test_a_hunk_larger_than_a_part_is_not_reviewed_and_the_others_are():
    plan = _plan(_change("docs/big.md", 10, 2000, 10))
    (left,) = plan.not_reviewed
    assert (left.path, left.hunks) == ("docs/big.md", (2, 2))
    assert "hunk 2 of 3 of its change alone" in left.reason
    runs = sorted(f.hunks[:2] for p in plan.parts for f in p.files if f.hunks)
    assert runs == [(1, 1), (3, 3)]


def test_within_a_part_the_change_keeps_the_patchs_order():
    plan = _plan(_change("z/last.py", 5), _change("a/first.py", 5))
    assert [f.path for f in plan.parts[0].files] == ["z/last.py", "a/first.py"]
