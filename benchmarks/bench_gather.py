"""Benchmark 4: gathering a generated 20,000-file repository (with a .gitignore).

Ours is `deepseek-review run --dry-run -c .` as a user runs it: git lists the files, every file
is stat'ed, read, checked (NUL bytes, UTF-8), hashed and framed, and the request is built and
hashed; nothing is sent. The baseline is `git ls-files -z | xargs -0 cat`, which lists and reads
the same files and does nothing else. Both are fresh processes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from benchmarks.common import BenchResult, git_init, interleaved, run_command, tool

FILES = 20_000
IGNORED = 2_000
ROUNDS = 5


def _make_repo(root: Path) -> int:
    """20,000 small source files in 200 folders, plus ignored build output; returns bytes."""
    total = 0
    for d in range(200):
        folder = root / "src" / f"pkg{d:03d}"
        folder.mkdir(parents=True)
        for f in range(FILES // 200):
            text = f"# module {d}.{f}\n" + "".join(
                f"def f{i}(x):\n    return x + {i}\n" for i in range(8)
            )
            (folder / f"m{f:03d}.py").write_text(text)
            total += len(text)
    build = root / "build"
    build.mkdir()
    for i in range(IGNORED):
        (build / f"out{i}.o").write_bytes(b"\0" * 64)
    (root / ".gitignore").write_text("build/\n*.o\n")
    git_init(root)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    return total


def run(work: Path) -> BenchResult:
    root = work / "repo"
    root.mkdir()
    total = _make_repo(root)
    limit = str(total * 2)
    ours_cmd = [
        tool(),
        "-q",
        "run",
        "--dry-run",
        "-c",
        ".",
        "-p",
        "Review.",
        "--max-context-bytes",
        limit,
        "--max-file-bytes",
        limit,
    ]
    base_cmd = ["sh", "-c", "git ls-files -z | xargs -0 cat > /dev/null"]
    ours, base = interleaved(
        lambda: run_command(ours_cmd, cwd=root),
        lambda: run_command(base_cmd, cwd=root),
        rounds=ROUNDS,
    )
    return BenchResult(
        name="gather a 20,000-file repository",
        goal="<= 1.5x `git ls-files -z | xargs -0 cat`",
        ratio=ours / base,
        met=ours / base <= 1.5,
        ours_seconds=ours,
        baseline_seconds=base,
        baseline="git ls-files -z | xargs -0 cat",
        commands=[" ".join(["deepseek-review", *ours_cmd[1:]]), base_cmd[2]],
        notes=[
            f"{FILES} tracked files ({total / 1e6:.1f} MB) in 200 folders, {IGNORED} ignored "
            "files under build/; "
            f"{ROUNDS} interleaved rounds, medians; page cache warm for both.",
            f"{os.cpu_count()} CPUs.",
        ],
    )
