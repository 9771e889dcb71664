"""Benchmark 1: one review end to end, against a plain stdlib script and curl.

All three make one chat-completions request to the same simulator (no latency) and write an
answer; ours and the stdlib script also write a receipt. Each is a fresh process, as a user
runs it, so start-up (imports) counts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks.common import (
    BenchResult,
    SimulatorProcess,
    git_init,
    interleaved,
    run_command,
    tool,
)

HERE = Path(__file__).resolve().parent
ROUNDS = 11


def _make_repo(root: Path) -> list[str]:
    root.mkdir()
    git_init(root)
    files = []
    for i in range(4):
        rel = f"src/module_{i}.py"
        path = root / rel
        path.parent.mkdir(exist_ok=True)
        path.write_text(
            "".join(f"def f{j}(x):\n    return x * {j}  # line {j}\n" for j in range(120))
        )
        files.append(rel)
    return files


def run(work: Path) -> BenchResult:
    repo = work / "repo"
    files = _make_repo(repo)
    out = work / "out"
    out.mkdir()
    with SimulatorProcess("--answer-words", "300") as sim:
        ours_cmd = [
            tool(),
            "-q",
            "run",
            "--endpoint",
            sim.base_url,
            "-p",
            "Review these files.",
            "--no-stream",
            "--output-dir",
            "reviews",
        ]
        for f in files:
            ours_cmd += ["-c", f]
        streamed_cmd = [c for c in ours_cmd if c != "--no-stream"]
        stdlib_cmd = [
            sys.executable,
            str(HERE / "stdlib_review.py"),
            sim.chat_url,
            str(out),
            *files,
        ]
        # curl sends the exact body our tool sent (rebuilt from its request record).
        run_command(ours_cmd, cwd=repo)
        record = sorted((repo / "reviews").glob("*.request.json"))[0]
        from deepseek_review.records.rebuild import rebuild_body, repo_reader

        rebuilt = rebuild_body(json.loads(record.read_text())["body"], repo_reader(repo))
        assert rebuilt.body_bytes is not None
        body_file = work / "body.json"
        body_file.write_bytes(rebuilt.body_bytes)
        curl_cmd = [
            "curl",
            "-sS",
            "--fail",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            f"@{body_file}",
            "-o",
            str(out / "curl-answer.json"),
            sim.chat_url,
        ]
        ours, stdlib = interleaved(
            lambda: run_command(ours_cmd, cwd=repo),
            lambda: run_command(stdlib_cmd, cwd=repo),
            rounds=ROUNDS,
        )
        streamed, curl = interleaved(
            lambda: run_command(streamed_cmd, cwd=repo),
            lambda: run_command(curl_cmd),
            rounds=ROUNDS,
        )
    py = [sys.executable, "-c", "pass"]
    bare_python, _ = interleaved(lambda: run_command(py), lambda: 0.0, rounds=ROUNDS)
    return BenchResult(
        name="one review end to end",
        goal="no slower than a stdlib-only script (ratio <= 1.0)",
        ratio=ours / stdlib,
        met=ours <= stdlib,
        ours_seconds=ours,
        baseline_seconds=stdlib,
        baseline="stdlib-only script, same request, same two files",
        commands=[
            " ".join(["deepseek-review", *ours_cmd[1:]]),
            " ".join(["python", "benchmarks/stdlib_review.py", "<url>", "<out>", *files]),
            " ".join(["curl", *curl_cmd[1:]]),
        ],
        extra={
            "ours, streamed (default) [s]": streamed,
            "ours / curl": ours / curl,
            "curl [s]": curl,
            "python -c pass [s]": bare_python,
        },
        notes=[
            f"{ROUNDS} interleaved rounds, medians; simulator without latency, 300-word answers,"
            " 4 context files (~27 KB).",
            "Ours is timed with --no-stream against the non-streaming stdlib script; the "
            "streamed (default) time is listed as well.",
            "Why the goal is missed: the request itself takes a few milliseconds (see curl); "
            "the rest is start-up. The stack the project is built on (typer, httpx, tenacity, "
            "jsonschema validators) costs about 150 ms of imports before any work, which alone "
            "is twice the whole stdlib script; then come the checks the script does not make "
            "(git root discovery, path confinement, UTF-8 and NUL checks, the receipt "
            "validated before it is written) and three fsynced files instead of two plain "
            "ones. Taken so far: the receipt schema ships compiled (-100 ms), no CA bundle "
            "for plain-http endpoints (-50 ms), typer held below 0.29 and its pydantic "
            "import (-90 ms), jsonschema never imported unless a receipt is invalid (-1.5 s).",
        ],
    )
