"""``batch``: 200 single-segment reviews, --jobs 8, against a simulator with capacity 8.

The simulator (a separate process) answers each request in 200 ms and serves 8 at a time, so
no client can do better than 200 x 0.2 s / 8 = 5 s: the goal is within 1.15x of that,
for the whole ``deepseek-review batch`` command (start-up, checking and planning the
manifest, 200 requests, 600 files written with fsync, the report). The same 200 reviews as
200 sequential ``deepseek-review run`` commands are timed once, for comparison.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import BenchResult

N_REVIEWS = 200
JOBS = 8
LATENCY = 0.2
CAPACITY = 8
ANSWER_WORDS = 120
IDEAL = N_REVIEWS * LATENCY / CAPACITY
GOAL = 1.15
ROUNDS = 3

_FILES = {
    "docs/spec.md": "# Spec\n\nThe mean of 2, 4 and 9 is 5.\n\nThe median of 1, 3, 8 is 3.\n",
    "docs/design.md": "# Design\n\nOne module per job; the core raises, the CLI exits.\n",
    "src/pkg/__init__.py": "",
    "src/pkg/mean.py": "def mean(xs):\n    return sum(xs) / len(xs)\n",
    "src/pkg/median.py": "def median(xs):\n    s = sorted(xs)\n    return s[len(s) // 2]\n",
    "src/pkg/util.py": "def clamp(x, lo, hi):\n    return max(lo, min(hi, x))\n",
}
_CONTEXTS = (
    '"docs/spec.md"',
    '["docs/spec.md", "src/pkg/mean.py"]',
    '"src/pkg/*.py"',
    '["docs/*.md", "src/pkg/median.py"]',
)


def _make_repo(root: Path) -> Path:
    for rel, text in _FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    lines = ["[defaults]", 'model = "deepseek-v4-flash"', "max_tokens = 2048", ""]
    for i in range(N_REVIEWS):
        lines += [
            "[[review]]",
            f'topic = "review-{i:03d}"',
            f'prompt = "Check item {i}: is the arithmetic right?"',
            f"context = {_CONTEXTS[i % len(_CONTEXTS)]}",
            "",
        ]
    manifest = root / "reviews.toml"
    manifest.write_text("\n".join(lines), encoding="utf-8")
    return manifest


class _Simulator:
    """The simulator as its own process (as a user would run it), not a thread of ours."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "deepseek_review.simulator",
                "--port",
                "0",
                "--latency",
                str(LATENCY),
                "--capacity",
                str(CAPACITY),
                "--answer-words",
                str(ANSWER_WORDS),
                "--quiet",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().split()[-1]

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def _batch_command(url: str, out: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "deepseek_review",
        "--quiet",
        "batch",
        "reviews.toml",
        "--jobs",
        str(JOBS),
        "--endpoint",
        url,
        "--output-dir",
        out,
        "--report",
        f"{out}.report.json",
    ]


def _run_commands(url: str, out: str) -> list[list[str]]:
    cmds = []
    for i in range(N_REVIEWS):
        context = _CONTEXTS[i % len(_CONTEXTS)].strip("[]").replace('"', "").split(", ")
        cmd = [sys.executable, "-m", "deepseek_review", "--quiet", "run"]
        for c in context:
            cmd += ["-c", c]
        cmd += [
            "-p",
            f"Check item {i}: is the arithmetic right?",
            "--topic",
            f"review-{i:03d}",
            "--max-tokens",
            "2048",
            "--endpoint",
            url,
            "--output-dir",
            out,
        ]
        cmds.append(cmd)
    return cmds


def _timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def _floor(url: str) -> float:
    """The same 200 requests from 8 threads of a bare http.client loop (no planning, no files):
    what this simulator allows any client, which its own per-event pacing puts above 5 s."""
    import http.client
    import json
    import threading
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    body = json.dumps(
        {
            "model": "deepseek-v4-flash",
            "messages": [{"role": "user", "content": "Check the arithmetic. " * 40}],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": 2048,
        }
    ).encode()

    def worker(n: int) -> None:
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
        for _ in range(n):
            conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            conn.getresponse().read()
        conn.close()

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(N_REVIEWS // JOBS,)) for _ in range(JOBS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def run(work: Path) -> BenchResult:
    root = work / "batch-repo"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    _make_repo(root)
    sim = _Simulator()
    try:
        # Warm-up: imports compiled, page cache warm, the simulator's threads started.
        _timed(_batch_command(sim.url, "warmup"), root)
        batch_times, no_stream, floors = [], [], []
        for r in range(ROUNDS):
            batch_times.append(_timed(_batch_command(sim.url, f"out-{r}"), root))
            no_stream.append(_timed([*_batch_command(sim.url, f"ns-{r}"), "--no-stream"], root))
            floors.append(_floor(sim.url))
        t0 = time.perf_counter()
        for cmd in _run_commands(sim.url, "sequential"):
            subprocess.run(cmd, cwd=root, check=True, stdout=subprocess.DEVNULL)
        sequential = time.perf_counter() - t0
        resume = _timed(_batch_command(sim.url, "out-0"), root)
    finally:
        sim.close()
    ours = statistics.median(batch_times)
    ratio = ours / IDEAL
    floor = statistics.median(floors)
    ours_no_stream = statistics.median(no_stream)
    return BenchResult(
        name=f"batch: {N_REVIEWS} reviews, --jobs {JOBS}, simulator 200 ms x capacity 8",
        goal=f"<= {GOAL}x the ideal {N_REVIEWS} x {LATENCY} s / {CAPACITY} = {IDEAL:g} s",
        ratio=ratio,
        met=ratio <= GOAL,
        ours_seconds=ours,
        baseline_seconds=IDEAL,
        baseline=f"the ideal: {N_REVIEWS} x {LATENCY} s / {CAPACITY} slots = {IDEAL:g} s",
        commands=[
            " ".join(_batch_command("$URL", "out-N")),
            f"{N_REVIEWS} x " + " ".join(_run_commands("$URL", "sequential")[0]),
        ],
        notes=[
            f"batch rounds (s): {', '.join(f'{t:.2f}' for t in batch_times)}",
            f"with --no-stream: {ours_no_stream:.2f} s ({ours_no_stream / IDEAL:.2f}x the ideal)",
            f"floor (a bare http.client loop, 8 threads, same requests, no files): {floor:.2f} s "
            f"({floor / IDEAL:.2f}x the ideal); the batch command is {ours / floor:.2f}x that, "
            "start-up and planning included",
            f"{N_REVIEWS} sequential `run` commands: {sequential:.1f} s "
            f"({sequential / ours:.1f}x slower than the batch)",
            f"re-running a finished batch (all skipped, zero requests): {resume:.2f} s",
            "Why the streamed goal is missed: the simulator paces a streamed answer event by "
            "event, so even a bare client needs the floor above (about 1.08x the ideal); on "
            "top of it come start-up (about 0.3 s) and planning the 200 entries (about "
            "0.15 s). Without streaming the command is within about 1.12x the ideal.",
        ],
        extra={
            "ideal_seconds": IDEAL,
            "no_stream_seconds": ours_no_stream,
            "ratio_no_stream_to_ideal": ours_no_stream / IDEAL,
            "floor_seconds": floor,
            "ratio_to_floor": ours / floor,
            "sequential_seconds": sequential,
            "ratio_to_sequential": ours / sequential,
            "resume_seconds": resume,
        },
    )


if __name__ == "__main__":
    import json
    import tempfile
    from dataclasses import asdict

    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(asdict(run(Path(tmp))), indent=2))
