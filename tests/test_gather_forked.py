"""Gathering many listed files on two cores (:func:`deepseek_review.context_forked.read_all`):
a forked child reads chunks while this process reads its own, and what comes out is exactly
what one process reads -- every file, skip and refusal, in order -- whatever the child does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deepseek_review import context_forked, context_read
from deepseek_review.context import ContextLimits, Gathered, gather_context
from deepseek_review.errors import InputError
from tests.conftest import CliResult, git
from tests.test_git_processes import _logged_git

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork: Linux only")

LIMITS = ContextLimits(max_file_bytes=1000, max_context_bytes=10_000_000)
PARENT = os.getpid()
THRESHOLD = context_forked.FORK_MIN_FILES


@pytest.fixture
def many(repo: Path, tmp_path: Path) -> Path:
    """``repo`` with more listed files than the forked read starts at, and among them one of
    each kind of file that is left out: binary, not UTF-8, over the size limit, a symlink out
    of the repository, a FIFO, and a tracked file removed after it was listed (added, then
    deleted: git still lists it)."""
    for d in range(context_forked.FORK_MIN_FILES // 100 + 1):
        folder = repo / "src" / f"p{d:02d}"
        folder.mkdir(parents=True)
        for f in range(100):
            (folder / f"m{f:03d}.py").write_text(f"X = {d * 100 + f}\n", encoding="utf-8")
    odd = repo / "src" / "p07"
    (odd / "blob.bin").write_bytes(b"ab\0cd")
    (odd / "latin1.txt").write_bytes(b"caf\xe9\n")
    (odd / "big.txt").write_text("x" * 2000, encoding="utf-8")
    (tmp_path / "outside.txt").write_text("secret\n", encoding="utf-8")
    (odd / "out.txt").symlink_to(tmp_path / "outside.txt")
    os.mkfifo(odd / "pipe")
    (odd / "gone.py").write_text("G = 1\n", encoding="utf-8")
    git(repo, "add", "src/p07/gone.py")
    (odd / "gone.py").unlink()
    return repo


def _one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(context_forked, "FORK_MIN_FILES", sys.maxsize)


def _seen(got: Gathered) -> tuple[list[Any], list[Any]]:
    return [tuple(f) for f in got], list(got.skipped)


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the children forked while the test runs (each reaped by then, or not)."""
    pids: list[int] = []
    real = os.fork

    def fork() -> int:
        pid = real()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    return pids


def no_child_left() -> bool:
    """Whether this process has no child (running, or exited and not reaped)."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_the_forked_read_gives_what_one_process_reads(
    many: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names, texts, hashes, sizes, skipped files and their reasons, in the same order."""
    forked = _seen(gather_context(many, ["."], LIMITS))
    assert len(forks) == 1
    _one_process(monkeypatch)
    one = _seen(gather_context(many, ["."], LIMITS))
    assert forked == one
    assert len(one[0]) > THRESHOLD
    kinds = {s.path.rpartition("/")[2]: s.kind for s in one[1]}
    assert kinds == {
        "blob.bin": "binary",
        "latin1.txt": "not UTF-8",
        "big.txt": "over --max-file-bytes",
        "out.txt": "a symlink out of the repository",
    }


def test_a_few_files_are_read_without_a_fork(repo: Path, forks: list[int]) -> None:
    gather_context(repo, ["."], LIMITS)
    assert forks == []


def test_a_child_killed_leaves_its_chunks_to_this_process_with_the_same_result(
    many: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = context_read.read_entries

    def killed_in_child(*args: Any) -> Iterator[Any]:
        if os.getpid() != PARENT:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args)

    monkeypatch.setattr(context_read, "read_entries", killed_in_child)
    forked = _seen(gather_context(many, ["."], LIMITS))
    assert len(forks) == 1 and no_child_left()
    _one_process(monkeypatch)
    assert forked == _seen(gather_context(many, ["."], LIMITS))


def test_an_explicit_file_refused_is_refused_as_by_one_process(
    many: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file named explicitly after the folder (one git ignores, so the folder does not
    list it) is refused with one process's words, and no child outlives the error."""
    (many / "notes.log").write_bytes(b"caf\xe9\n")
    specs = [".", "notes.log"]
    with pytest.raises(InputError) as forked:
        gather_context(many, specs, LIMITS)
    assert len(forks) == 1 and no_child_left()
    _one_process(monkeypatch)
    with pytest.raises(InputError) as one:
        gather_context(many, specs, LIMITS)
    assert str(forked.value) == str(one.value)
    assert "notes.log: not UTF-8" in str(one.value)


def test_a_total_over_the_limit_names_the_file_one_process_names(
    many: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    limits = ContextLimits(max_file_bytes=1000, max_context_bytes=12_000)
    with pytest.raises(InputError) as forked:
        gather_context(many, ["."], limits)
    assert len(forks) == 1 and no_child_left()
    _one_process(monkeypatch)
    with pytest.raises(InputError) as one:
        gather_context(many, ["."], limits)
    assert str(forked.value) == str(one.value)


def test_ctrl_c_while_reading_leaves_no_child(
    many: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = context_read.read_entries
    calls = []

    def interrupted_in_parent(*args: Any) -> Iterator[Any]:
        calls.append(1)
        if os.getpid() == PARENT and len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(context_read, "read_entries", interrupted_in_parent)
    with pytest.raises(KeyboardInterrupt):
        gather_context(many, ["."], LIMITS)
    assert len(forks) == 1 and no_child_left()


def test_a_dry_runs_request_is_the_same_bytes_read_forked(
    many: Path, cli: Any, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ("run", "--dry-run", "--json", "-c", ".", "-p", "Review.", "--max-file-bytes", "1000")
    forked: CliResult = cli(*args)
    assert forked.code == 0, forked.err
    assert len(forks) == 1
    _one_process(monkeypatch)
    one: CliResult = cli(*args)
    assert forked.json()["prompt_sha256"] == one.json()["prompt_sha256"]
    assert forked.out == one.out


#: A ``run --dry-run -c .`` of many files: git's ``rev-parse``, ``ls-files`` and the
#: ``ls-tree`` of ``HEAD`` that pins, and one forked child reading half of the files.
LARGE_DRY_RUN_GIT = ["rev-parse", "ls-files", "ls-tree"]
LARGE_DRY_RUN_FORKS = 1


def test_a_large_folder_dry_run_starts_three_git_processes_and_one_child(
    many: Path, tmp_path: Path
) -> None:
    git(many, "add", "-A")
    git(many, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "all")
    folder, log = _logged_git(tmp_path)
    probe = (
        "import os, sys\n"
        "real = os.fork\n"
        "def fork():\n"
        "    pid = real()\n"
        "    if pid:\n"
        "        print('forked', file=sys.stderr, flush=True)\n"
        "    return pid\n"
        "os.fork = fork\n"
        "from deepseek_review.cli import main\n"
        "main(['run', '--dry-run', '-c', '.', '-p', 'x'])\n"
    )
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=many, capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    calls = [c.split(" safe.bareRepository=explicit ", 1)[-1] for c in log.read_text().splitlines()]
    commands = [next(w for w in c.split() if not w.startswith("-") and "=" not in w) for c in calls]
    assert sorted(commands) == sorted(LARGE_DRY_RUN_GIT)
    assert out.stderr.count("forked") == LARGE_DRY_RUN_FORKS
