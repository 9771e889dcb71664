"""A change's patch split per file (:mod:`deepseek_review.git.patch`): the listing, each
file's section and what is binary are where git puts them, a git that fails part way is one
line and its exit code, and the fence found while splitting is the one the kept text needs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.git.diff import Decide, DiffSettings, Range, make_diff
from deepseek_review.git.patch import Change, parse_patch
from deepseek_review.git.runner import git_output
from deepseek_review.util.textsafe import fence_for
from tests.support.git import base_commit, commit, git

#: What the review's ``diff-tree`` prints first: the change listed, then its patch.
_LISTED_AND_PATCH = ("diff-tree", "-r", "-p", "-M50%", "--raw", "-z", "--no-abbrev")


def _many_kinds(repo: Path) -> tuple[str, str]:
    """A change holding each kind git shows: added, deleted, modified, renamed, mode and type
    changes, a binary file, and a name with a space."""
    (repo / "run.sh").write_text("echo hi\n", encoding="utf-8")
    (repo / "old.txt").write_text("line\n" * 20, encoding="utf-8")
    (repo / "link").symlink_to("docs/spec.md")
    a = base_commit(repo)
    (repo / "run.sh").chmod(0o755)
    git(repo, "mv", "old.txt", "renamed.txt")
    (repo / "link").unlink()
    b = commit(
        repo,
        "many",
        {
            "docs/spec.md": None,
            "link": "now a file\n",
            "logo.png": b"\x89PNG\0\1\2",
            "src/pkg/__init__.py": "X = 1\n",
            "a name with spaces.md": "diff --git a/x b/x\n",  # a line that only looks like one
        },
    )
    return a, b


def test_the_patch_is_split_where_git_begins_each_file(repo: Path) -> None:
    a, b = _many_kinds(repo)
    out = git_output(repo, *_LISTED_AND_PATCH, a, b, "--")
    assert out is not None
    reader = parse_patch(out)
    names = git(repo, "diff-tree", "-r", "-M50%", "--name-status", a, b).splitlines()
    assert [f"{c.status}\t{c.old_path}\t{c.path}" if c.status[0] == "R" else
            f"{c.status}\t{c.path}" for c in reader.changes] == names  # fmt: skip
    begin = out.index(b"\0\0diff --git ") + 2
    lines = [m.start() for m in re.finditer(rb"(?m)^diff --git ", out[begin:])]
    hunk_line = out.index(b"+diff --git a/x b/x") - begin  # inside a hunk: not a file's start
    assert reader.starts == [begin + at for at in lines if at != hunk_line + 1]
    assert len(reader.starts) == sum(c.sections for c in reader.changes)  # the type change: 2
    by_section = [c.path for c in reader.changes for _ in range(c.sections)]
    assert [p for p, flag in zip(by_section, reader.binary, strict=True) if flag] == ["logo.png"]


def test_a_patch_alone_is_split_as_the_same_patch_after_its_listing(repo: Path) -> None:
    """The patch made again with a diff driver set back has no listing: its sections are
    the same ones, found from its first byte."""
    a, b = _many_kinds(repo)
    listed = git_output(repo, *_LISTED_AND_PATCH, a, b, "--")
    alone = git_output(repo, "diff-tree", "-r", "-p", "-M50%", a, b, "--")
    assert listed is not None and alone is not None
    begin = listed.index(b"\0\0diff --git ") + 2
    assert listed[begin:] == alone
    whole, patch = parse_patch(listed), parse_patch(alone, listing=False)
    assert patch.changes == []
    assert [s + begin for s in patch.starts] == whole.starts
    assert (patch.binary, patch.runs) == (whole.binary, whole.runs)


def test_an_empty_change_has_no_sections(repo: Path) -> None:
    a = base_commit(repo)
    out = git_output(repo, *_LISTED_AND_PATCH, a, a, "--")
    assert out == b""
    assert parse_patch(out)[1:] == ([], [], [], [])


def test_a_blob_missing_from_the_patch_is_one_line_and_exit_3(repo: Path, cli: Any) -> None:
    """git lists the change, then fails while making the patch: one line, nothing more."""
    a = base_commit(repo)
    b = commit(repo, "gone", {"src/pkg/a.py": "a blob that will be lost\n"})
    blob = git(repo, "rev-parse", f"{b}:src/pkg/a.py").strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    (repo / "src/pkg/a.py").write_text("changed since\n", encoding="utf-8")  # git may not reuse it
    result = cli("run", "-p", "x", "--dry-run", "--diff", f"{a}..{b}")
    assert result.code == 3
    said = "deepseek-review: error: git could not show the change (diff-tree failed)"
    assert result.err.strip() == said


@pytest.mark.parametrize(
    ("kept", "fence"),
    [("no ticks at all, two ``\n", "```"), ("```\n", "````"), ("a ````` run\n", "``````")],
)
def test_the_fence_found_while_reading_is_the_one_the_kept_text_needs(
    repo: Path, kept: str, fence: str
) -> None:
    """Worked out over the files kept only (a longer run in a file left out does not
    lengthen it): what :func:`fence_for` finds in the text."""
    a = base_commit(repo)
    b = commit(repo, "ticks", {"notes.md": kept, "poetry.lock": "``````````\n"})

    def rules(_changes: list[Change]) -> Decide:
        return lambda change, binary: "lock file" if change.path == "poetry.lock" else None

    diff = make_diff(repo, Range(a, b), DiffSettings(), rules)
    assert [c.path for c in diff.shown] == ["notes.md"]
    assert diff.fence == fence_for(diff.text) == fence
