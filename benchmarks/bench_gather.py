"""``run --dry-run -c .`` on a generated 20,000-file repository (with a .gitignore).

The headline is the command a user runs: ``deepseek-review run --dry-run -c .`` in a fresh
process (start-up, git listing the files with the ignore rules applied, every file opened,
read, checked and hashed, the prompt rendered, the request body serialised and hashed, the
file list printed). The baseline ``git ls-files -z | xargs -0 cat`` lists and reads the same
files and does nothing else. The library's ``gather_context`` alone, in a fresh Python, is a
detail against the same baseline. So is a plain dry run inside the stack
(:mod:`benchmarks.floor_dryrun`: typer imported, ``git ls-files``, every file read, decoded,
JSON-escaped into one hash, the list printed; one process, none of ours' checks or framing),
timed against the baseline and against ours. An untimed pass under strace first shows each
side of ours and the plain dry run open exactly the files git lists.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.common import BenchResult, Command, compare, git_init, seconds, tool
from benchmarks.strace import files_opened

HERE = Path(__file__).resolve().parent

FILES = 20_000
GOAL = 1.4
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
    ours_cmd, base_cmd, library, plain = _commands(root, str(total * 2))
    tracked = _read_what_git_lists(
        root, (("run", ours_cmd), ("lib", library), ("floor_dryrun.py", plain))
    )
    ours, base = compare(ours_cmd, base_cmd, rounds)
    lib, base2 = compare(library, base_cmd, rounds)
    plain_side, base3 = compare(plain, base_cmd, rounds)
    ours_again, plain_again = compare(ours_cmd, plain, rounds)
    ratio = ours.wall / base.wall
    return BenchResult(
        name=f"`run --dry-run -c .` on a {files:,}-file repository",
        goal=f"<= {GOAL}x `git ls-files -z | xargs -0 cat`",
        ratio=ratio,
        met=ratio <= GOAL,
        ours=ours,
        baseline=base,
        baseline_name="git ls-files -z | xargs -0 cat",
        rounds=rounds,
        commands=[ours_cmd.shown(), base_cmd.shown(), library.shown(), plain.shown()],
        details=[
            (
                "the library's gather alone (`gather_context` in a fresh python), vs the same "
                "baseline",
                f"{lib.wall / base2.wall:.2f}x ({seconds(lib)} vs {seconds(base2)})",
            ),
            (
                "a plain dry run inside the stack (floor_dryrun.py: `import typer`, `git "
                "ls-files`, every file read, decoded, JSON-escaped into one sha256, the list "
                "printed; one process; no ignore rules, limits, checks, framing or template), "
                "vs the same baseline",
                f"{plain_side.wall / base3.wall:.2f}x ({seconds(plain_side)} vs {seconds(base3)})",
            ),
            (
                "ours vs that plain dry run",
                f"{ours_again.wall / plain_again.wall:.2f}x ({seconds(ours_again)} vs "
                f"{seconds(plain_again)})",
            ),
        ],
        notes=_notes(files, total, len(tracked)),
    )


def _commands(root: Path, limit: str) -> tuple[Command, Command, Command, Command]:
    """The sides: ours (``run --dry-run``), the baseline (``git ls-files | xargs cat``), the
    library's gather alone, and a plain dry run inside the stack (floor_dryrun.py)."""
    gather_code = (
        "from pathlib import Path; from deepseek_review.context import ContextLimits, "
        "gather_context; "
        f"gather_context(Path('.').resolve(), ['.'], ContextLimits({limit}, {limit}))"
    )
    library = Command((sys.executable, "-c", gather_code), root)
    # A server that is not Ollama: the row times gathering and planning, not the pre-flight
    # a dry run makes against an Ollama server.
    cli = [tool(), "-q", "run", "--dry-run", "-c", ".", "-p", "Review.", "--server", "vllm"]
    ours_cmd = Command((*cli, "--max-context-bytes", limit, "--max-file-bytes", limit), root)
    base_cmd = Command(("sh", "-c", "git ls-files -z | xargs -0 cat"), root)
    plain = Command((sys.executable, str(HERE / "floor_dryrun.py"), "."), root)
    return ours_cmd, base_cmd, library, plain


def _read_what_git_lists(root: Path, sides: tuple[tuple[str, Command], ...]) -> list[str]:
    """The files git lists, after checking (strace) that each side reads exactly those."""
    tracked = (
        subprocess.run(["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True)
        .stdout.decode()
        .split("\0")[:-1]
    )
    read = {name: files_read(cmd, root) for name, cmd in sides}
    for name, got in read.items():
        if got != set(tracked):
            raise RuntimeError(f"{name} read {len(got)} files, git ls-files lists {len(tracked)}")
    return tracked


def _notes(files: int, total: int, tracked: int) -> list[str]:
    """The repository, how the sides were checked to do the same work, and what ours does
    beyond gathering."""
    return [
        f"{files:,} tracked files ({total / 1e6:.1f} MB) in {files // 100} folders, "
        f"{IGNORED:,} ignored files under build/; page cache warm for both.",
        f"Same work, checked before timing (strace): `run --dry-run` and the library each "
        f"opened exactly the {tracked:,} files `git ls-files` lists.",
        "On top of gathering, `run --dry-run` imports the command line, renders the prompt "
        "(every file framed), serialises and hashes the request body and prints the file "
        "list.",
    ]
