"""How many git processes a command starts: each costs a fork, an exec and git's own start-up
(milliseconds), so the fixed cost of ``run`` grows with every one that creeps back.

A logging ``git`` first on ``PATH`` (an absolute folder, as the runner requires) records each
call and hands it to the real git, so what runs is what a user's command runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.git import (
    commit_all,
    git,
    git_calls,
    run_in_process,
)

#: A ``run --dry-run`` of one file in a git work tree: the one ``rev-parse`` that finds the
#: root and everything else asked of it, and the one ``ls-tree`` of ``HEAD`` that pins it.
DRY_RUN_ONE_FILE = 2


def _dry_run(cwd: Path, tmp_path: Path, path: str) -> list[str]:
    return git_calls(cwd, tmp_path, "run", "--dry-run", "-c", path, "-p", "Check.")


def test_a_dry_run_of_one_committed_file_starts_two_git_processes(
    repo: Path, tmp_path: Path
) -> None:
    commit_all(repo)
    calls = _dry_run(repo, tmp_path, "docs/spec.md")
    assert [c.split()[0] for c in calls] == ["rev-parse", "-c"]
    assert len(calls) == DRY_RUN_ONE_FILE


def test_a_dry_run_from_a_subfolder_finds_the_root_without_asking_git_again(
    repo: Path, tmp_path: Path
) -> None:
    commit_all(repo)
    calls = _dry_run(repo / "src" / "pkg", tmp_path, "mean.py")
    assert len(calls) == DRY_RUN_ONE_FILE, calls


def test_a_dry_run_before_the_first_commit_starts_one_git_process(
    repo: Path, tmp_path: Path
) -> None:
    """No ``HEAD`` yet: nothing to pin against, and the one ``rev-parse`` already said so."""
    assert len(_dry_run(repo, tmp_path, "docs/spec.md")) == 1


def test_a_dry_run_outside_git_asks_git_once(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.md").write_text("a note\n", encoding="utf-8")
    assert len(_dry_run(plain, tmp_path, "notes.md")) == 1


def test_a_run_starts_as_many_git_processes_as_its_dry_run(
    repo: Path, tmp_path: Path, simulator: object
) -> None:
    commit_all(repo)
    url = simulator.base_url  # type: ignore[attr-defined]
    args = ("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", url, "-q")
    assert len(git_calls(repo, tmp_path, *args)) == DRY_RUN_ONE_FILE


@pytest.mark.parametrize("where", ["root", "subfolder"])
def test_one_rev_parse_still_pins_a_committed_file_to_its_blob(
    repo: Path, tmp_path: Path, where: str
) -> None:
    """What the single ``rev-parse`` answers is what pinning used to ask on its own."""
    commit_all(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    blob = git(repo, "rev-parse", "HEAD:docs/spec.md").strip()
    cwd = repo if where == "root" else repo / "src"
    spec = "docs/spec.md" if where == "root" else "../docs/spec.md"
    out = run_in_process(cwd, "run", "--dry-run", "--json", "-c", spec, "-p", "Check.")
    pins = json.loads(out)["git"]["files"]
    assert pins == [{"path": "docs/spec.md", "blob": blob, "commit": head}]


def _three_pinned_reviews(repo: Path, simulator: object) -> None:
    commit_all(repo)
    url = simulator.base_url  # type: ignore[attr-defined]
    for path in ("docs/spec.md", "src/pkg/mean.py", ".gitignore"):
        run_in_process(repo, "run", "-c", path, "-p", "Check.", "--endpoint", url, "-q")


def test_verify_reads_no_blob_from_git_while_the_pinned_files_are_unchanged(
    repo: Path, tmp_path: Path, simulator: object
) -> None:
    """The working tree's bytes are the pinned blobs (their ids are their hashes): git is
    not asked for them."""
    _three_pinned_reviews(repo, simulator)
    calls = git_calls(repo, tmp_path, "verify", "--strict", "-q")
    assert [c for c in calls if "cat-file" in c] == [], calls


def test_verify_reads_the_blobs_of_changed_files_through_one_git_process_for_the_run(
    repo: Path, tmp_path: Path, simulator: object
) -> None:
    _three_pinned_reviews(repo, simulator)
    (repo / "docs" / "spec.md").write_text("# Spec, edited\n", encoding="utf-8")
    (repo / "src" / "pkg" / "mean.py").write_text("def mean(xs):\n    return 0\n")
    (repo / ".gitignore").write_text("*.tmp\n", encoding="utf-8")
    calls = git_calls(repo, tmp_path, "verify", "--strict", "-q")
    assert [c for c in calls if "cat-file" in c] == ["cat-file --batch"], calls
