"""``run --dry-run -c .`` on a generated 20,000-file repository (with a .gitignore).

Ours is the command a user runs: ``deepseek-review run --dry-run -c .`` in a fresh process
(start-up, git listing the files with the ignore rules applied, every file opened, read,
checked and hashed, the prompt rendered, the request body serialised and hashed, the file list
printed). The baseline ``git ls-files -z | xargs -0 cat`` lists and reads the same files and
does nothing else. An untimed pass under strace first checks ours opens exactly the files git
lists. The guard: ours at most 2.5x the baseline.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from benchmarks.common import BenchResult, Command, compare, git_init, tool
from benchmarks.strace import files_opened

FILES = 20_000
LIMIT = 2.5
IGNORED = 2_000
ROUNDS = 5


def _make_repo(root: Path, files: int) -> int:
    """``files`` small source files, 100 a folder, plus ignored build output; returns bytes."""
    total = 0
    for d in range(files // 100):
        folder = root / "src" / f"pkg{d:03d}"
        folder.mkdir(parents=True)
        for f in range(100):
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


def files_read(cmd: Command, root: Path) -> set[str]:
    """The tracked files ``cmd`` opened (strace; git's own files under .git/ left out)."""
    opened = files_opened(cmd.argv, root, cwd=root)
    if opened is None:
        raise RuntimeError("the gather row needs strace, to show both sides read the same files")
    rels = (p.relative_to(root).as_posix() for p in opened)
    return {r for r in rels if not r.startswith(".git/")}


def run(work: Path, rounds: int = ROUNDS, files: int = FILES) -> BenchResult:
    root = (work / "repo").resolve()
    root.mkdir()
    total = _make_repo(root, files)
    ours_cmd, base_cmd = _commands(root, str(total * 2))
    tracked = _read_what_git_lists(root, ours_cmd)
    ours, base = compare(ours_cmd, base_cmd, rounds)
    ratio = ours.wall / base.wall
    return BenchResult(
        name=f"`run --dry-run -c .` on a {files:,}-file repository",
        limit=f"<= {LIMIT:g}x `git ls-files -z | xargs -0 cat`",
        ratio=ratio,
        held=ratio <= LIMIT,
        ours=ours,
        baseline=base,
        baseline_name="git ls-files -z | xargs -0 cat",
        rounds=rounds,
        commands=[ours_cmd.shown(), base_cmd.shown()],
        details=[("CPU time, ours / baseline", f"{ours.cpu / base.cpu:.2f}x")],
        notes=_notes(files, total, len(tracked)),
    )


def _commands(root: Path, limit: str) -> tuple[Command, Command]:
    """The sides: ours (``run --dry-run``) and the baseline (``git ls-files | xargs cat``)."""
    # A server that is not Ollama: the row times gathering and planning, not the pre-flight
    # a dry run makes against an Ollama server.
    cli = [tool(), "-q", "run", "--dry-run", "-c", ".", "-p", "Review.", "--server", "vllm"]
    ours_cmd = Command((*cli, "--max-context-bytes", limit, "--max-file-bytes", limit), root)
    base_cmd = Command(("sh", "-c", "git ls-files -z | xargs -0 cat"), root)
    return ours_cmd, base_cmd


def _read_what_git_lists(root: Path, ours: Command) -> list[str]:
    """The files git lists, after checking (strace) that ours reads exactly those."""
    tracked = (
        subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True)
        .stdout.decode()
        .split("\0")[:-1]
    )
    got = files_read(ours, root)
    if got != set(tracked):
        raise RuntimeError(f"ours read {len(got)} files, git ls-files lists {len(tracked)}")
    return tracked


def _notes(files: int, total: int, tracked: int) -> list[str]:
    """The repository, how the sides were checked to do the same work, and what ours does
    beyond gathering."""
    return [
        f"{files:,} tracked files ({total / 1e6:.1f} MB) in {files // 100} folders, "
        f"{IGNORED:,} ignored files under build/; page cache warm for both.",
        f"Same work, checked before timing (strace): `run --dry-run` opened exactly the "
        f"{tracked:,} files `git ls-files` lists.",
        "On top of gathering, `run --dry-run` imports the command line, renders the prompt "
        "(every file framed), serialises and hashes the request body and prints the file "
        "list.",
    ]
