"""Benchmark 5: peak memory of a review with a 5 MB context.

Peak resident memory (ru_maxrss of the child process) of `deepseek-review run` with a 5 MB
context, minus the peak of the same command with a 1-file context: what the context costs,
not what importing Python and the libraries costs. Compared with the size of the request body.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.common import BenchResult, SimulatorProcess, git_init, tool

CONTEXT_BYTES = 5 * 1024 * 1024


def _peak_rss_bytes(argv: list[str], cwd: Path) -> int:
    """Peak RSS of one child, measured by a tiny wrapper so earlier children don't mix in."""
    code = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=cwd, check=True, capture_output=True, text=True
    )
    return int(out.stdout.strip()) * 1024  # Linux reports KiB


def _make_repo(root: Path) -> None:
    root.mkdir()
    git_init(root)
    (root / "ctx").mkdir()
    line = "The quick brown fox jumps over the lazy dog; the sum of 2 and 3 is 5.\n"
    per_file = CONTEXT_BYTES // 10
    for i in range(10):
        (root / "ctx" / f"part{i}.md").write_text((line * (per_file // len(line) + 1))[:per_file])
    (root / "small.md").write_text(line)


def run(work: Path) -> BenchResult:
    repo = work / "repo"
    _make_repo(repo)
    with SimulatorProcess("--answer-words", "200") as sim:
        common = [
            tool(),
            "-q",
            "run",
            "-p",
            "Review.",
            "--endpoint",
            sim.base_url,
            "--max-file-bytes",
            str(CONTEXT_BYTES),
            "--max-context-bytes",
            str(2 * CONTEXT_BYTES),
            "--allow-truncated-prompt",
            "--json",
        ]
        big_cmd = [*common, "-c", "ctx"]
        small_cmd = [*common, "-c", "small.md"]
        big = min(_peak_rss_bytes(big_cmd, repo) for _ in range(3))
        small = min(_peak_rss_bytes(small_cmd, repo) for _ in range(3))
    record = max(
        (repo / "reviews").glob("*.request.json"),
        key=lambda p: json.loads(p.read_text())["prompt_token_estimate"],
    )
    body_bytes = json.loads(record.read_text())
    from deepseek_review.records.rebuild import rebuild_body, repo_reader

    rebuilt = rebuild_body(body_bytes["body"], repo_reader(repo))
    assert rebuilt.body_bytes is not None
    body = len(rebuilt.body_bytes)
    extra = big - small
    ratio = extra / body
    return BenchResult(
        name="peak memory, 5 MB context",
        goal="<= 4x the request body",
        ratio=ratio,
        met=ratio <= 4.0,
        ours_seconds=extra / 1e6,
        baseline_seconds=body / 1e6,
        unit="MB",
        baseline=f"the request body ({body / 1e6:.2f} MB)",
        commands=[
            " ".join(["deepseek-review", *big_cmd[1:]]),
            " ".join(["deepseek-review", *small_cmd[1:]]),
        ],
        extra={
            "peak RSS with 5 MB context [MB]": big / 1e6,
            "peak RSS with a 1-line context [MB]": small / 1e6,
            "attributable to the context [MB]": extra / 1e6,
            "request body [MB]": body / 1e6,
        },
        notes=[
            "Peak RSS (ru_maxrss) of the child process, best of 3 runs each; the ratio is "
            "(peak with 5 MB - peak with a 1-line context) / request body bytes."
        ],
    )
