"""What a command does, seen through ``strace``: how many processes it uses, which files it
opens, which programs it runs. Each benchmark asks once per side, untimed (strace slows what
it traces), to show that the two sides of a row do the same work."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

# A fork is logged whole, or cut in two by another process's line ("<unfinished ...>", then
# "<... clone resumed>"); only one that returned a pid made a process: one interrupted by a
# signal returns "? ERESTARTNOINTR" and is logged again when the kernel restarts it.
_FORK = re.compile(r"^(\d+)\s+(?:clone3?|fork|vfork)\((.*)$")
_RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (?:clone3?|fork|vfork) resumed>")
_MADE = re.compile(r"= \d+$")
# A call cut by another process's line ("<unfinished ...>") is named again when it resumes;
# with -y the descriptor returned is followed by the full path behind it.
_OPENED = re.compile(r"(?:open(?:at)?\(|<\.\.\. open(?:at)? resumed>).* = \d+<([^>]+)>$")
_EXEC = re.compile(r'^\d+\s+execve\("[^"]*", \[(.*?)\](?:, | /\*)')


def available() -> bool:
    return shutil.which("strace") is not None


def trace(
    argv: Sequence[str],
    flags: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: Path | None = None,
) -> list[str]:
    """The lines ``strace -f -qq FLAGS`` logs for ``argv`` (which must succeed)."""
    with tempfile.NamedTemporaryFile(prefix="dsr-bench-strace-", suffix=".log") as log:
        with open(stdin or os.devnull, "rb") as feed:
            subprocess.run(
                ["strace", "-f", "-qq", *flags, "-o", log.name, *argv],
                cwd=cwd,
                env=dict(env) if env is not None else None,
                check=True,
                stdin=feed,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        return Path(log.name).read_text(encoding="utf-8", errors="replace").splitlines()


def count_processes(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: Path | None = None,
) -> int | None:
    """How many processes ``argv`` uses in all (itself, its children and theirs; threads not
    counted); None when strace is not installed."""
    if not available():
        return None
    lines = trace(argv, ["-e", "trace=clone,clone3,fork,vfork"], cwd=cwd, env=env, stdin=stdin)
    return 1 + _forks(lines)


def _forks(lines: Sequence[str]) -> int:
    """The forks in ``lines`` (strace -f) that made a process (threads not counted)."""
    made, cut = 0, set()
    for ln in lines:
        if (fork := _FORK.match(ln)) and "CLONE_THREAD" not in ln:
            if ln.endswith("<unfinished ...>"):
                cut.add(fork.group(1))
            else:
                made += bool(_MADE.search(ln))
        elif (resumed := _RESUMED.match(ln)) and resumed.group(1) in cut:
            cut.discard(resumed.group(1))
            made += bool(_MADE.search(ln))
    return made


def files_opened(
    argv: Sequence[str], under: Path, *, cwd: Path | str | None = None
) -> list[Path] | None:
    """The regular files under ``under`` that ``argv`` (and its children) opened without
    writing, once each, in first-open order; None when strace is not installed.

    ``strace -y`` names the path behind each descriptor returned, so files opened relative
    to a directory descriptor (``openat(dirfd, "name")``) are named in full.
    """
    if not available():
        return None
    flags = ["-y", "-e", "trace=open,openat", "-e", "signal=none"]
    seen: dict[Path, None] = {}
    prefix = str(under.resolve()) + os.sep
    for line in trace(argv, flags, cwd=cwd):
        m = _OPENED.search(line)
        if m is None or "O_WRONLY" in line or "O_RDWR" in line or "O_DIRECTORY" in line:
            continue
        path = Path(m.group(1))
        if str(path).startswith(prefix) and path.is_file():
            seen.setdefault(path, None)
    return list(seen)


def commands_run(argv: Sequence[str], *, cwd: Path | str | None = None) -> list[list[str]]:
    """The argument lists of every program ``argv`` and its children executed, in order;
    [] when strace is not installed."""
    if not available():
        return []
    lines = trace(argv, ["-s", "65535", "-e", "trace=execve", "-e", "signal=none"], cwd=cwd)
    found = (_EXEC.match(line) for line in lines)
    return [json.loads(f"[{m.group(1)}]") for m in found if m is not None]
