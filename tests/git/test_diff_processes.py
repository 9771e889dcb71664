"""What a diff review asks of git: the range's revisions resolved by one process, the change
listed and made by one ``diff-tree``, and nothing of one call's range kept for the next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deepseek_review import api
from deepseek_review.context.git_plan import GitOptions
from deepseek_review.errors import ReviewError
from deepseek_review.reviewing.plan import ReviewOptions, ReviewPlan, plan_review
from tests.support.git import base_commit, commit, git, git_calls


def _commands(calls: list[str]) -> list[str]:
    """Each call's git command (after the ``-c`` settings every call carries)."""
    out = []
    for call in calls:
        words = call.split()
        while words and words[0] == "-c":
            words = words[2:]
        out.append(words[0] if words else "")
    return out


def _two_commits(repo: Path) -> tuple[str, str]:
    a = base_commit(repo)
    return a, commit(repo, "change", {"src/pkg/a.py": "A = 1\n", "poetry.lock": "lock\n"})


def test_a_two_dot_range_dry_run_starts_six_git_processes(repo: Path, tmp_path: Path) -> None:
    """The root's ``rev-parse``, both ends of the range in one ``cat-file``, the change listed
    and made by one ``diff-tree``, and the attributes its paths have (``check-attr``: diff
    drivers; and files marked generated, as the base's ``.gitattributes`` files, looked up by
    a second ``cat-file``, mark them: the base has none here)."""
    a, b = _two_commits(repo)
    calls = git_calls(repo, tmp_path, "run", "--dry-run", "--diff", f"{a}..{b}", "-p", "x")
    assert sorted(_commands(calls)) == sorted(
        ["rev-parse", "cat-file", "diff-tree", "check-attr", "check-attr", "cat-file"]
    )


def test_a_single_revision_dry_run_adds_only_the_merge_base(repo: Path, tmp_path: Path) -> None:
    a, _ = _two_commits(repo)
    calls = git_calls(repo, tmp_path, "run", "--dry-run", "--diff", a, "-p", "x")
    assert sorted(_commands(calls)) == sorted(
        ["rev-parse", "cat-file", "merge-base", "diff-tree", "check-attr", "check-attr", "cat-file"]
    )


def test_a_bad_second_revision_is_named_as_before(repo: Path, cli: Any) -> None:
    a = base_commit(repo)
    result = cli("run", "-p", "x", "--dry-run", "--diff", f"{a}..nope")
    assert result.code == 3
    assert "error: --diff nope: not a commit of the repository" in result.err


def test_a_bad_template_with_a_good_range_is_one_line(repo: Path, cli: Any) -> None:
    a, b = _two_commits(repo)
    result = cli("run", "-p", "x", "--dry-run", "--diff", f"{a}..{b}", "--template", "nope")
    assert result.code == 2, result.err
    assert result.err == (
        "deepseek-review: error: unknown template 'nope'; choose from code-review, default, "
        "diff-review, spec-review, synthesis\n"
    )


@pytest.mark.parametrize("first_fails", [False, True])
def test_a_later_call_sees_where_the_branch_is_now(repo: Path, first_fails: bool) -> None:
    """Nothing of one call's range outlives it, failed or not: the next plan of the same
    process reads the branch afresh."""
    base_commit(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    first = commit(repo, "one", {"src/pkg/a.py": "A = 1\n"})
    kw: dict[str, Any] = {"prompt": "x", "repo_root": str(repo), "diff": "main..feature"}
    git(repo, "branch", "-q", "-f", "main", f"{first}~1")
    if first_fails:  # refused after the range was read
        with pytest.raises(ReviewError):
            api.plan_review(**kw, template="no-such-template")
    else:
        planned = api.plan_review(**kw)
        assert isinstance(planned, ReviewPlan)
        assert planned.pins["commits"]["head"] == first  # type: ignore[index]
    second = commit(repo, "two", {"src/pkg/b.py": "B = 2\n"})
    again = ReviewOptions(
        context=(), prompt="x", repo_root=str(repo), git=GitOptions("main..feature")
    )
    assert plan_review(again).pins["commits"]["head"] == second  # type: ignore[index]
