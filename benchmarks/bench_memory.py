"""Peak memory of one review with 5 MB of context, against its body and the stdlib script.

Ours is ``deepseek-review run`` (streamed, the default) with ten 512 KiB context files; the
baseline is :mod:`benchmarks.stdlib_review` (a stdlib script) sending the same body
bytes (checked by a recording simulator). Each side is also run with a one-line context, so
that what the context costs is told from what the interpreter and imports cost: the figure is
(peak with 5 MB - peak with one line) / the request body's size. Peaks are the largest
resident set of each side's main process (``/usr/bin/time -f %M``, see
:func:`.common.run_command`), medians of pairs run side by side with the order alternating.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks.bench_review import keep_request
from benchmarks.common import (
    BenchResult,
    Command,
    Side,
    SimulatorProcess,
    compare,
    git_init,
    recorded_bodies,
    seconds,
    tool,
)

HERE = Path(__file__).resolve().parent
CONTEXT_BYTES = 5 * 1024 * 1024
LIMIT = 1.6
ROUNDS = 5


def make_repo(root: Path, context_bytes: int) -> None:
    root.mkdir()
    git_init(root)
    (root / "ctx").mkdir()
    line = "The quick brown fox jumps over the lazy dog; the sum of 2 and 3 is 5.\n"
    per_file = context_bytes // 10
    for i in range(10):
        (root / "ctx" / f"part{i}.md").write_text((line * (per_file // len(line) + 1))[:per_file])
    (root / "small.md").write_text(line)


def commands(work: Path, repo: Path, base_url: str, context: str, name: str) -> list[Command]:
    """Ours and the stdlib script for one context (the skeleton comes from ours)."""
    run = [tool(), "-q", "run", "-p", "Review.", "--endpoint", base_url, "-c", context]
    run += ["--max-file-bytes", str(CONTEXT_BYTES), "--max-context-bytes", str(2 * CONTEXT_BYTES)]
    run += ["--allow-truncated-prompt"]  # the simulator says 256k tokens, as Ollama would
    out = work / "stdlib-out"
    out.mkdir(exist_ok=True)
    chat = base_url + "/v1/chat/completions"
    script = (sys.executable, str(HERE / "stdlib_review.py"), str(work / f"skeleton-{name}.json"))
    return [Command((*run,), repo, peak=True), Command((*script, chat, str(out)), repo, peak=True)]


def attributable(big: Side, small: Side) -> int:
    return big.max_rss - small.max_rss


def run(work: Path, rounds: int = ROUNDS, context_bytes: int = CONTEXT_BYTES) -> BenchResult:
    repo = work / "repo"
    make_repo(repo, context_bytes)
    with SimulatorProcess("--answer-words", "200") as sim:
        ours_big, seed_big = commands(work, repo, sim.base_url, "ctx", "big")
        ours_small, seed_small = commands(work, repo, sim.base_url, "small.md", "small")
        body = keep_request(ours_big, repo, work / "skeleton-big.json")
        keep_request(ours_small, repo, work / "skeleton-small.json")

        def sender(which: int) -> Callable[[str], object]:
            return lambda url: commands(work, repo, url, "ctx", "big")[which].run()

        sent = [recorded_bodies(send=sender(w), work=work) for w in (0, 1)]
        if sent[0] != sent[1] or len(sent[0]) != 1:
            raise RuntimeError(f"the two sides sent different bodies: {sent}")
        ours, seed = compare(ours_big, seed_big, rounds)
        ours_floor, seed_floor = compare(ours_small, seed_small, rounds)
    ours_extra = attributable(ours, ours_floor)
    seed_extra = attributable(seed, seed_floor)
    ratio = ours_extra / len(body)
    return BenchResult(
        name=f"peak memory, {context_bytes / 2**20:g} MB of context",
        limit=f"<= {LIMIT}x the request body",
        ratio=ratio,
        held=ratio <= LIMIT,
        ours=ours,
        baseline=seed,
        baseline_name="the stdlib script of the run row, same body (context)",
        rounds=rounds,
        memory=True,
        commands=[ours_big.shown(), seed_big.shown(), ours_small.shown(), seed_small.shown()],
        details=[
            ("request body", f"{len(body) / 1e6:.2f} MB"),
            (
                "ours: peak with 5 MB - peak with one line",
                f"{ours_extra / 1e6:.1f} MB = {ratio:.2f}x the body "
                f"({ours.max_rss / 1e6:.1f} - {ours_floor.max_rss / 1e6:.1f} MB)",
            ),
            (
                "stdlib script: the same",
                f"{seed_extra / 1e6:.1f} MB = {seed_extra / len(body):.2f}x the body "
                f"({seed.max_rss / 1e6:.1f} - {seed_floor.max_rss / 1e6:.1f} MB)",
            ),
            ("ours / stdlib script, context's cost", f"{ours_extra / seed_extra:.2f}x"),
            (
                "with one line: ours, stdlib script",
                f"{seconds(ours_floor, memory=True)}; {seconds(seed_floor, memory=True)}",
            ),
        ],
        notes=[
            "Same work, checked before timing: a recording simulator received the same "
            f"{len(body):,}-byte body from both (sha256 {sent[0][0][:16]}…).",
            "The ratio in the table is ours' context cost over the body size (the guard), "
            "not ours over the baseline.",
        ],
    )
