"""A git command whose output is read as git writes it.

:func:`.repo.git_output` hands back what a command printed once it has ended. A diff review
needs the first part of ``diff-tree``'s output (the change's listing) long before git has
made the rest (the patch): read as it comes, the listing's other questions to git and the
patch's splitting run while git is still diffing. The command is the one
:func:`.repo.git_command` builds (the same safe config and environment), and a refused
repository is reported as :func:`.repo.git_output` reports it.

git writes into an unnamed in-memory file (``memfd``; a temporary file where there is none),
not a pipe: git writes its output 4 KiB at a time, and each write into a pipe wakes the
reader (some 1,300 wake-ups for a 5 MB patch, which cost git more than the diff's splitting
costs us). Here git writes at file speed, and what it wrote is taken every millisecond.
"""

from __future__ import annotations

import atexit
import os
import select
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .repo import check_refusal, git_command, git_env

#: The most bytes taken at a time, and how long to wait for more (seconds).
CHUNK = 1 << 20
POLL = 0.001


def _unnamed_file(name: str) -> int:
    """A readable and writable file that no folder names (gone when closed)."""
    if hasattr(os, "memfd_create"):
        try:
            return os.memfd_create(name, os.MFD_CLOEXEC)
        except OSError:
            pass  # a kernel without memfd
    import tempfile

    fd, path = tempfile.mkstemp(prefix=f"deepseek-review-{name}-")
    os.unlink(path)
    return fd


class _Exit:
    """Waits for a while, or until the process ``pid`` exits if that comes first (a pidfd,
    where the system has them: the last of git's output is read at once, not up to a
    :data:`POLL` later)."""

    def __init__(self, pid: int) -> None:
        try:
            self._fd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else -1
        except OSError:
            self._fd = -1

    def __enter__(self) -> _Exit:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd >= 0:
            os.close(self._fd)

    def wait(self, seconds: float) -> None:
        if self._fd >= 0:
            select.select([self._fd], [], [], seconds)
        else:
            time.sleep(seconds)


class GitStream:
    """``git ARGS`` started at once in ``cwd``; :meth:`chunks` yields what it prints as it
    prints it, :meth:`finish` says whether it succeeded. Use it in a ``with`` block: leaving
    the block early stops the command."""

    def __init__(self, cwd: Path, *args: str) -> None:
        self._cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None
        self._out = self._err = -1
        argv = git_command(cwd, list(args))
        if argv is None:
            return
        self._out, self._err = _unnamed_file("git-out"), _unnamed_file("git-err")
        try:
            self._proc = subprocess.Popen(
                argv, cwd=cwd, env=git_env(), stdin=subprocess.DEVNULL,
                stdout=self._out, stderr=self._err,
            )  # fmt: skip
        except OSError:
            self.close()

    def __enter__(self) -> GitStream:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def chunks(self) -> Iterator[bytes]:
        """What git prints, a chunk at a time as it comes, until it exits; nothing when git
        could not be started."""
        proc, at = self._proc, 0
        if proc is None:
            return
        with _Exit(proc.pid) as exited:
            while True:
                ended = proc.poll() is not None  # before the read: then it took everything
                while data := os.pread(self._out, CHUNK, at):
                    at += len(data)
                    yield data
                if ended:
                    return
                exited.wait(POLL)

    def finish(self) -> bool:
        """Whether the command ran and exited 0 (once its output was read): a repository git
        refuses is a :class:`.errors.ConfigError`, as for :func:`.repo.git_output`."""
        if self._proc is None:
            return False
        code = self._proc.wait()
        if code:
            check_refusal(self._cwd, code, os.pread(self._err, CHUNK, 0))
        return code == 0

    def close(self) -> None:
        """Stop the command if it still runs, and let go of its files."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        for fd in (self._out, self._err):
            if fd >= 0:
                os.close(fd)
        self._out = self._err = -1


@dataclass(frozen=True)
class _Early:
    cwd: Path
    args: tuple[str, ...]
    stream: GitStream
    note: object


#: The command started ahead of the one who reads it (:func:`start_early`); one at a time.
_EARLY: list[_Early] = []
_EARLY_LOCK = threading.Lock()


def start_early(cwd: Path, *args: str, note: object = None) -> None:
    """Start ``git ARGS`` now, for the caller that will :func:`take` the same command later,
    with a ``note`` for it (what the command was made from: :func:`early_note`). Any other
    command started early is stopped; so is one never taken, by :func:`drop_early`."""
    _stop(_swap(_Early(cwd, args, GitStream(cwd, *args), note)))


def early_note(cwd: Path) -> object:
    """The note of the command started early in ``cwd`` and not yet taken, or None."""
    with _EARLY_LOCK:
        return next((e.note for e in _EARLY if e.cwd == cwd), None)


def take(cwd: Path, *args: str) -> GitStream:
    """``git ARGS`` in ``cwd``: the one :func:`start_early` started if it is this very command
    (it has been running since), else started now. Any other started early is stopped."""
    early = _swap(None)
    if early is not None and (early.cwd, early.args) == (cwd, args):
        return early.stream
    _stop(early)
    return GitStream(cwd, *args)


@atexit.register
def drop_early() -> None:
    """Stop the command started early that nobody took (the call that started it ended)."""
    _stop(_swap(None))


def _swap(new: _Early | None) -> _Early | None:
    """Put ``new`` in the early slot; what was there."""
    with _EARLY_LOCK:
        old = _EARLY[0] if _EARLY else None
        _EARLY[:] = [new] if new is not None else []
    return old


def _stop(early: _Early | None) -> None:
    if early is not None:
        early.stream.close()
