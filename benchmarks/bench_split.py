"""Planning a split review of 100,000 files (~50 million tokens): ``run --split --dry-run``.

Ours is what a user runs before paying for a split review of a large repository: ``deepseek-
review run --split --dry-run -c .`` in a fresh process, on a generated repository of 100,000
files of 2,000 bytes (200 MB, 50 million tokens by the plain bytes/4 estimate) in 1,000
folders, against a 32,768-token window. It pays for everything the plan needs: start-up, git
listing the files, every file read, checked and hashed, the parts planned (folders kept
together), and every part planned to its exact request (prompt rendered, body serialised and
hashed), the plan printed. Not the planner's function alone: a user never calls it without
the reading and the exact requests, and those are most of the cost. The endpoint is a
loopback one (a local Ollama's), so no file is scanned for secrets (a remote endpoint's plan
scans every file first). The guard is absolute: under 10 s wall and under 1 GB peak resident
set. ``git ls-files -o -z | xargs -0 cat`` (listing and reading the same files, nothing
else) is timed beside it as context.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from benchmarks.common import BenchResult, Command, compare, git_init, tool

FILES = 100_000
FILE_BYTES = 2_000
WINDOW = 32_768
MAX_TOKENS = 4_096
LIMIT_SECONDS = 10.0
LIMIT_BYTES = 10**9
ROUNDS = 3


def make_repo(root: Path, files: int = FILES, size: int = FILE_BYTES) -> int:
    """``files`` Python files of ``size`` bytes, 100 a folder, untracked in a fresh git
    repository (``-c .`` lists them as git would add them); returns their bytes."""
    root.mkdir()
    git_init(root)
    line = "def f(x):\n    return x + 1  # a line of code of some length\n\n"
    body = line * (size // len(line) + 1)
    for i in range(files):
        folder = root / f"pkg{i // 100:04d}"
        if i % 100 == 0:
            folder.mkdir()
        (folder / f"mod{i % 100:02d}.py").write_text((f"# module {i}\n" + body)[:size])
    return files * size


def commands(root: Path, *, as_json: bool = False) -> tuple[Command, Command]:
    """Ours (``run --split --dry-run``) and the baseline (list and read the same files)."""
    cli = [tool(), "-q", "run", "--split", "--dry-run", "-c", ".", "-p", "Review."]
    cli += ["--endpoint", "http://127.0.0.1:9", "--context-window", str(WINDOW)]
    cli += ["--max-tokens", str(MAX_TOKENS), "--max-file-bytes", str(10 * FILE_BYTES)]
    ours = Command((*cli, *(["--json"] if as_json else [])), root, peak=True)
    base = Command(("sh", "-c", "git ls-files -o --exclude-standard -z | xargs -0 cat"), root)
    return ours, base


def _plan(root: Path) -> dict[str, object]:
    """The plan of one untimed run (``--json``): what the timed runs print in words."""
    ours, _ = commands(root, as_json=True)
    out = subprocess.run(ours.argv, cwd=root, check=True, capture_output=True).stdout
    plan: dict[str, object] = json.loads(out)
    return plan


def run(work: Path, rounds: int = ROUNDS, files: int = FILES) -> BenchResult:
    root = (work / "repo").resolve()
    total = make_repo(root, files)
    plan = _plan(root)
    parts = plan["parts"]
    assert isinstance(parts, list)
    planned = sum(len(p["files"]) for p in parts)
    if planned != files:
        raise RuntimeError(f"the plan holds {planned} files, the repository {files}")
    ours_cmd, base_cmd = commands(root)
    ours, base = compare(ours_cmd, base_cmd, rounds)
    held = ours.wall <= LIMIT_SECONDS and ours.max_rss <= LIMIT_BYTES
    return BenchResult(
        name=f"planning a split review of {files:,} files (`run --split --dry-run -c .`)",
        limit=f"<= {LIMIT_SECONDS:g} s and <= {LIMIT_BYTES / 1e9:g} GB peak (absolute)",
        ratio=ours.wall / LIMIT_SECONDS,
        held=held,
        ours=ours,
        baseline=base,
        baseline_name="git ls-files -o -z | xargs -0 cat (context)",
        rounds=rounds,
        memory=True,
        commands=[ours_cmd.shown(), base_cmd.shown()],
        details=[
            ("peak resident set", f"{ours.max_rss / 1e6:.0f} MB (limit {LIMIT_BYTES / 1e6:.0f})"),
            ("CPU time (user + system)", f"{ours.cpu:.2f} s"),
            ("parts", f"{len(parts):,} of at most {plan['part_cap']} tokens each"),
            ("tokens, all prompts and answers at --max-tokens", f"{plan['total_tokens']:,}"),
        ],
        notes=[
            f"{files:,} files ({total / 1e6:.0f} MB, {total // 4 / 1e6:.0f} million tokens at "
            f"bytes/4) in {files // 100:,} folders, untracked; page cache warm for both.",
            f"Same work, checked before timing: the plan of an untimed run holds every one "
            f"of the {files:,} files.",
            f"A {WINDOW:,}-token window, --max-tokens {MAX_TOKENS:,}, a loopback endpoint "
            "(no secret scan). The ratio is ours' median wall time over the 10 s limit.",
        ],
    )
