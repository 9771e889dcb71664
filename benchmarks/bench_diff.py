"""Benchmark 6: planning a diff review of a 2,000-file, 50,000-line change.

Ours is the whole `deepseek-review run --dry-run --diff A..B` in a fresh process: the command
line's start-up, the range resolved, the change listed (`diff --raw`), the attributes asked
(`check-attr`), the patch made once and split per file, the noise rules, the prompt framed,
the 5 MB request serialised and hashed. The baseline is `git diff A..B` producing the same
patch (checked before timing: the git command ours runs, found under strace, prints the
same bytes) to /dev/null. Both are fresh processes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from benchmarks.common import BenchResult, Command, compare, git_init, seconds, tool
from benchmarks.strace import commands_run

FILES = 2_000
GOAL = 2.0
NOWHERE = "http://127.0.0.1:9"  # a dry run sends nothing
#: A server that is not Ollama: the rows time planning, not the pre-flight a dry run makes
#: against an Ollama server (three metadata requests).
NOT_OLLAMA = ("--server", "vllm")
LINES_CHANGED = 25  # per file: 2,000 x 25 = 50,000 changed lines (+ and -)
ROUNDS = 15  # a ~0.3 s row on a shared machine: 5 pairs moved its ratio by 0.2 run to run


def _commit(root: Path, message: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=root, check=True, env=env)
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True)
    return out.stdout.decode().strip()


def _make_repo(root: Path, files: int) -> tuple[str, str]:
    """``files`` files of 50 lines, then every one with 25 of its lines changed."""
    git_init(root)
    for version in (0, 1):
        for d in range(files // 100):
            folder = root / "src" / f"pkg{d:02d}"
            folder.mkdir(parents=True, exist_ok=True)
            for f in range(100):
                lines = [
                    f"    value_{i} = compute({i}, {version if i % 2 else 0})\n" for i in range(50)
                ]
                (folder / f"m{f:03d}.py").write_text(f"def f{d}_{f}():\n" + "".join(lines))
        if version == 0:
            a = _commit(root, "base")
    return a, _commit(root, "change")


def patch_of(root: Path, argv: list[str]) -> bytes:
    """What one git command prints (run without the shell, as ours ran it)."""
    return subprocess.run(argv, cwd=root, check=True, capture_output=True).stdout


def same_patch(root: Path, ours: Command, base_cmd: Command) -> tuple[list[str], int]:
    """The git command ours made its patch with (strace), checked to print the very bytes
    the baseline prints (after the change's listing, when it asks for ``--raw`` in the same
    call); that command and the patch's size."""
    made = [c for c in commands_run(ours.argv, cwd=root) if "-p" in c and "diff-tree" in c]
    if len(made) != 1:
        raise RuntimeError(f"expected ours to make the patch with one git diff-tree -p: {made}")
    out = patch_of(root, made[0])
    if "--raw" in made[0]:  # NUL-ended records, then an empty one, then the patch
        out = out[out.index(b"\0\0diff --git ") + 2 :]
    theirs = patch_of(root, list(base_cmd.argv))
    if hashlib.sha256(out).digest() != hashlib.sha256(theirs).digest():
        raise RuntimeError("ours and the baseline made different patches")
    return made[0], len(theirs)


def run(work: Path, rounds: int = ROUNDS, files: int = FILES) -> BenchResult:
    root = work / "repo"
    root.mkdir()
    a, b = _make_repo(root, files)
    spec = f"{a}..{b}"
    base_cmd = Command(("git", "diff", "--full-index", spec), root)
    limit = str(len(patch_of(root, list(base_cmd.argv))) * 2)
    argv = [tool(), "-q", "run", "--dry-run", "--diff", spec, "-p", "Review the change."]
    ours_cmd = Command(
        (*argv, "--max-context-bytes", limit, "--endpoint", NOWHERE, *NOT_OLLAMA), root
    )
    made, patch_bytes = same_patch(root, ours_cmd, base_cmd)
    ours, base = compare(ours_cmd, base_cmd, rounds)
    one = [tool(), "-q", "run", "--dry-run", "-c", "src/pkg00/m000.py", "-p", "Review."]
    one_cmd = Command((*one, "--endpoint", NOWHERE, *NOT_OLLAMA), root)
    fixed, base2 = compare(one_cmd, base_cmd, rounds)
    ratio = ours.wall / base.wall
    return BenchResult(
        name=f"plan a diff review of a {files:,}-file, {files * LINES_CHANGED:,}-line change",
        goal=f"< {GOAL}x `git diff --full-index A..B` (the same patch)",
        ratio=ratio,
        met=ratio < GOAL,
        ours=ours,
        baseline=base,
        baseline_name="git diff --full-index A..B",
        rounds=rounds,
        commands=[ours_cmd.shown(), base_cmd.shown(), one_cmd.shown()],
        details=[
            (
                "the command line's fixed cost: `run --dry-run` of one file, vs the same baseline",
                f"{fixed.wall / base2.wall:.2f}x ({seconds(fixed)} vs {seconds(base2)})",
            ),
            (
                "(ours - fixed cost) / baseline",
                f"{(ours.wall - fixed.wall) / base2.wall:.2f}x",
            ),
            (
                "CPU time, ours / baseline (what the ratio tends to when no core is free)",
                f"{ours.cpu / base.cpu:.2f}x",
            ),
        ],
        notes=[
            f"{files:,} files changed, {files * LINES_CHANGED:,} lines replaced, a "
            f"{patch_bytes / 1e6:.1f} MB patch.",
            "What each side does: ours is one Python process and its git processes (`rev-parse`"
            " finding the root, one `cat-file --batch-check` resolving both ends of the range, "
            "the `diff-tree` below read to its end, then two `check-attr` and a second "
            "`cat-file` for the attributes), then the prompt framed, the "
            "request serialised and hashed, and the plan printed; the baseline is one `git "
            "diff` writing its patch to /dev/null.",
            "Same work, checked before timing: ours made its patch with `"
            + " ".join(made[made.index("diff-tree") :])
            + "` (strace), which prints the very bytes the baseline prints (sha256 equal).",
        ],
    )
