"""A context folder's ``git ls-files``, started by the front door right after the options are
read (:func:`deepseek_review.context_ignore.start_listing`), so git lists while planning is
imported: gathering takes it only when it is the very command it runs, and nothing of it
outlives the call that started it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deepseek_review import api, gitstream
from deepseek_review.context_ignore import git_ls_files, start_listing
from deepseek_review.errors import InputError
from deepseek_review.repo import git_output


def no_child_left() -> bool:
    """Whether this process has no child (running, or exited and not reaped)."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.fixture
def streams(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every git command started as a stream while the test runs."""
    started: list[Any] = []
    real = gitstream.GitStream

    class Counted(real):  # type: ignore[valid-type,misc]
        def __init__(self, cwd: Path, *args: str) -> None:
            super().__init__(cwd, *args)
            started.append(self)

    monkeypatch.setattr(gitstream, "GitStream", Counted)
    return started


def _listing(repo: Path, pathspec: str) -> list[str]:
    """What git lists, run plainly (no early start in play)."""
    out = git_output(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    assert out is not None
    names = sorted(n for n in out.decode().split("\0") if n)
    return [n for n in names if pathspec == "." or n.startswith(pathspec + "/")]


def test_gathering_takes_the_listing_started_early_when_it_is_the_same_command(
    repo: Path, streams: list[Any]
) -> None:
    start_listing(repo, ["docs/spec.md", "."])
    assert git_ls_files(repo, ["."]) == _listing(repo, ".")
    assert len(streams) == 1  # not started again
    assert gitstream.early_note(repo) is None and no_child_left()


def test_a_listing_started_early_for_another_folder_is_stopped_and_gathering_runs_its_own(
    repo: Path, streams: list[Any]
) -> None:
    start_listing(repo, ["docs"])
    assert git_ls_files(repo, ["src"]) == _listing(repo, "src")
    assert len(streams) == 2
    assert gitstream.early_note(repo) is None and no_child_left()


def test_a_glob_before_any_folder_starts_nothing(repo: Path, streams: list[Any]) -> None:
    start_listing(repo, ["src/**/*.py", "docs"])
    assert streams == []


def test_a_listing_nobody_takes_is_stopped_when_the_call_that_started_it_ends(
    repo: Path, streams: list[Any]
) -> None:
    """``.git`` is a folder, so its listing starts; gathering refuses it before listing."""
    with pytest.raises(InputError, match="git's own data"):
        api.plan_review(context=[".git"], prompt="x")
    assert len(streams) == 1
    assert gitstream.early_note(repo) is None and no_child_left()


def test_a_folders_listing_starts_before_the_rest_of_planning_is_imported(repo: Path) -> None:
    probe = (
        "import sys, subprocess\n"
        "real = subprocess.Popen.__init__\n"
        "def spy(self, args, *a, **k):\n"
        "    if 'ls-files' in args:\n"
        "        loaded = 'deepseek_review.request' in sys.modules\n"
        "        print('ls-files started; request loaded:', loaded)\n"
        "    real(self, args, *a, **k)\n"
        "subprocess.Popen.__init__ = spy\n"
        "from deepseek_review.cli import main\n"
        "main(['run', '--dry-run', '-c', '.', '-p', 'x'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("ls-files started") == 1
    assert "ls-files started; request loaded: False" in out.stdout
