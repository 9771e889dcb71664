"""Benchmark 4: gathering a generated 20,000-file repository (with a .gitignore).

Gathering is what `--context .` does before any prompt exists: git lists the files (ignore
rules applied), and every file is opened, read, checked (regular file, size, NUL bytes,
UTF-8) and hashed. Ours runs `gather_context` in a fresh Python process (interpreter start-up
included); the baseline `git ls-files -z | xargs -0 cat` lists and reads the same files and
does nothing else. Both are fresh processes.

Also reported: the whole `deepseek-review run --dry-run -c .`, which on top of gathering
imports the command line, renders the prompt (20,000 framed files), serialises and hashes
the 7 MB request body and prints the file list.
"""

from __future__ import annotations

import os
import subprocess
import sys
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
    gather_code = (
        "from pathlib import Path; from deepseek_review.context import ContextLimits, "
        "gather_context; "
        f"gather_context(Path('.').resolve(), ['.'], ContextLimits({limit}, {limit}))"
    )
    ours_cmd = [sys.executable, "-c", gather_code]
    cli_cmd = [tool(), "-q", "run", "--dry-run", "-c", ".", "-p", "Review."]
    cli_cmd += ["--max-context-bytes", limit, "--max-file-bytes", limit]
    base_cmd = ["sh", "-c", "git ls-files -z | xargs -0 cat > /dev/null"]
    ours, base = interleaved(
        lambda: run_command(ours_cmd, cwd=root),
        lambda: run_command(base_cmd, cwd=root),
        rounds=ROUNDS,
    )
    cli, base2 = interleaved(
        lambda: run_command(cli_cmd, cwd=root),
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
        commands=[
            f'python -c "{gather_code}"',
            base_cmd[2],
            " ".join(["deepseek-review", *cli_cmd[1:]]),
        ],
        extra={
            "whole `run --dry-run -c .` [s]": cli,
            "whole `run --dry-run -c .` / baseline": cli / base2,
        },
        notes=[
            f"{FILES} tracked files ({total / 1e6:.1f} MB) in 200 folders, {IGNORED} ignored "
            "files under build/; "
            f"{ROUNDS} interleaved rounds, medians; page cache warm for both.",
            f"{os.cpu_count()} CPUs.",
        ],
    )
