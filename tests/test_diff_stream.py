"""A change's patch read as git writes it (:mod:`deepseek_review.gitpatch`,
:mod:`deepseek_review.gitstream`): however the bytes arrive, the listing, the sections and
what is binary are what reading git's whole output at once finds, and a git that fails part
way is still one line and its exit code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.gitdiff import Decide, DiffSettings, Range, make_diff
from deepseek_review.gitpatch import Change, PatchReader
from deepseek_review.gitstream import GitStream
from deepseek_review.prompt import fence_for
from deepseek_review.repo import git_output
from tests.conftest import git
from tests.test_diff_review import base_commit, commit

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


def _read(out: bytes, size: int) -> PatchReader:
    reader = PatchReader()
    for at in range(0, len(out), size):
        reader.feed(out[at : at + size])
    reader.end()
    return reader


def _found(reader: PatchReader) -> tuple[Any, ...]:
    return reader.changes, reader.starts, reader.binary, bytes(reader.data)


@pytest.mark.parametrize("size", [1, 2, 7, 64, 4096])
def test_a_patch_read_in_pieces_is_split_as_it_is_read_whole(repo: Path, size: int) -> None:
    a, b = _many_kinds(repo)
    out = git_output(repo, *_LISTED_AND_PATCH, a, b, "--")
    assert out is not None
    assert _found(_read(out, size)) == _found(_read(out, len(out)))


def test_the_patch_read_whole_is_split_where_git_begins_each_file(repo: Path) -> None:
    a, b = _many_kinds(repo)
    out = git_output(repo, *_LISTED_AND_PATCH, a, b, "--")
    assert out is not None
    reader = _read(out, len(out))
    assert reader.changes is not None
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


def test_the_listing_is_whole_before_the_patch_has_arrived(repo: Path) -> None:
    """What lets the listing's questions to git start while git still makes the patch."""
    a, b = _many_kinds(repo)
    out = git_output(repo, *_LISTED_AND_PATCH, a, b, "--")
    assert out is not None
    reader = PatchReader()
    reader.feed(out[: out.index(b"\0\0diff --git ") + 2])
    assert reader.changes == _read(out, len(out)).changes
    assert reader.changes is not None and len(reader.changes) == 7
    assert reader.starts == []


def test_a_git_that_fails_while_streaming_says_so(repo: Path) -> None:
    with GitStream(repo, "diff-tree", "-p", "no-such-commit", "HEAD") as stream:
        assert b"".join(stream.chunks()) == b""
        assert stream.finish() is False


def test_a_streamed_git_prints_what_git_prints(repo: Path) -> None:
    a, b = _many_kinds(repo)
    with GitStream(repo, *_LISTED_AND_PATCH, a, b, "--") as stream:
        got = b"".join(stream.chunks())
        assert stream.finish() is True
    assert got == git_output(repo, *_LISTED_AND_PATCH, a, b, "--")


def test_a_blob_missing_from_the_patch_is_one_line_and_exit_3(repo: Path, cli: Any) -> None:
    """git lists the change, then fails while making the patch: the listing's questions to
    git, already under way, change nothing of what the user sees."""
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
    """Worked out from the bytes as they arrive, over the files kept only (a longer run in a
    file left out does not lengthen it): what :func:`fence_for` finds in the text."""
    a = base_commit(repo)
    b = commit(repo, "ticks", {"notes.md": kept, "poetry.lock": "``````````\n"})

    def rules(_changes: list[Change]) -> Decide:
        return lambda change, binary: "lock file" if change.path == "poetry.lock" else None

    diff = make_diff(repo, Range(a, b), DiffSettings(), rules)
    assert [c.path for c in diff.shown] == ["notes.md"]
    assert diff.fence == fence_for(diff.text) == fence
