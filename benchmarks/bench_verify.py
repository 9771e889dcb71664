"""``deepseek-review verify`` of 10,000 receipts, against ``sha256sum`` of the files it reads.

The guard (issue 31): at most 3x what ``sha256sum`` takes over the same files verify reads
(listed by running verify once under strace), with the same number of processes on both sides
(``xargs -P``, the files split evenly), for records whose context is pinned to git blobs and
for records that are not (two rows). The receipts, answers and request records are written by
the tool's own pipeline (``plan_review`` + ``send_review``; a stand-in client returns ~7 KB
answers instantly), as a mix of primaries and continuation chains over a few shared context
files, so every receipt has a record and verify rebuilds every prompt byte for byte.

Both sides are fresh processes (start-up counts), timed in alternating pairs; the ratio of
medians is the result.
"""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

from benchmarks.common import BenchResult, Command, compare, git_init, tool
from benchmarks.strace import commands_run, files_opened

RECEIPTS = 10_000
LIMIT = 3.0
ROUNDS = 5
#: Segments per review, cycled: primaries alone and chains of 2 to 4 segments.
CHAIN_LENGTHS = (1, 2, 1, 3, 1, 4, 2, 1)
ANSWER_BYTES = 7_000


class _Client:
    """Stands in for ChatClient: answers at once, cut off until the chain is long enough."""

    url = "http://127.0.0.1:11434/v1/chat/completions"

    def __init__(self) -> None:
        self.segments_left = 1
        self.calls = 0
        # What the pre-flight context check has learnt of the server: not Ollama, nothing to
        # ask (a real client would find out from /api/version).
        self.learning = threading.Lock()
        self.learned: dict[tuple[str, str], object] = {("ollama", "deepseek-v4-flash"): None}

    def complete(self, body: bytes, *, model: str, stream: bool, **hooks: object) -> Any:
        """ChatClient.complete's shape; the progress and attempt hooks are not needed here."""
        from deepseek_review.chat.types import Completion, Usage

        self.calls += 1
        self.segments_left -= 1
        words = f"Finding {self.calls}: the mean in docs/spec.md line {self.calls % 97} is off. "
        text = (words * (ANSWER_BYTES // len(words) + 1))[:ANSWER_BYTES]
        return Completion(
            content=text,
            reasoning=None,
            finish_reason="length" if self.segments_left > 0 else "stop",
            usage=Usage(100_000, 1_750, 101_750),
            message_keys=("role", "content"),
            model=model,
            attempts=1,
            elapsed=0.0,
        )


def make_corpus(root: Path, receipts: int = RECEIPTS, *, pinned: bool = False) -> int:
    """Write ``receipts`` receipts (with answers and records) under ``root/reviews``;
    ``pinned``: the context files committed first, so every record pins them to their blobs
    (verify then checks each against its blob)."""
    from deepseek_review.reviewing.pipeline import ReviewOptions, plan_review

    logging.getLogger("deepseek_review").setLevel(logging.ERROR)
    root.mkdir(parents=True, exist_ok=True)
    git_init(root)
    (root / "docs").mkdir()
    (root / "src").mkdir()
    (root / "docs" / "spec.md").write_text(
        "# Spec\n\n"
        + "".join(f"- rule {i}: the mean of {i}, {i + 2} is {i + 1}.\n" for i in range(80))
    )
    for i in range(3):
        (root / "src" / f"mod{i}.py").write_text(
            "".join(f"def f{j}(x):\n    return x * {j} + {i}\n" for j in range(60))
        )
    if pinned:
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        subprocess.run(
            ["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "context"],
            cwd=root,
            check=True,
        )
    contexts = [("docs/spec.md",), ("docs/spec.md", "src/mod0.py"), ("src/mod1.py", "src/mod2.py")]
    base = ReviewOptions(
        context=(), prompt="Check the arithmetic.", repo_root=str(root), endpoint=_Client.url
    )
    plans = [plan_review(dataclasses.replace(base, context=c), env={}) for c in contexts]
    client = _Client()
    now = datetime(2026, 5, 12, 3, 35, 51, tzinfo=UTC)
    # The corpus is scaffolding, not what is timed: skip the durability syncs (30,000 fsyncs
    # would take minutes on some disks). The files written are the same.
    with mock.patch("os.fsync", lambda fd: None):
        return _write_reviews(plans, client, now, receipts)


def _write_reviews(plans: list[Any], client: _Client, now: datetime, receipts: int) -> int:
    from deepseek_review.reviewing.pipeline import ContinuationOptions, send_review

    made = i = 0
    while made < receipts:
        length = min(CHAIN_LENGTHS[i % len(CHAIN_LENGTHS)], receipts - made)
        plan = plans[i % len(plans)]
        options = dataclasses.replace(
            plan.options,
            topic=f"r{i:05d}",
            continuation=ContinuationOptions(max_continuations=length - 1),
        )
        client.segments_left = length
        send_review(dataclasses.replace(plan, options=options), client, now=lambda: now)  # type: ignore[arg-type]
        made += length
        i += 1
    return made


def sha256sum_side(
    root: Path, files: list[Path], processes: int, at_once: int, work: Path
) -> Command:
    """``sha256sum`` over ``files`` through ``xargs`` with as many processes in all as ours
    (``xargs`` and ``processes - 1`` sha256sum, the files split evenly) and as many running
    at once as ours has workers (paths relative to ``root`` and a 2 MB command line, so
    xargs makes no split of its own)."""
    listing = work / f"files-{len(files)}.list"
    listing.write_bytes(b"".join(bytes(f.relative_to(root)) + b"\0" for f in files))
    per = -(-len(files) // max(1, processes - 1))
    argv = ("xargs", "-0", "-s", "2000000", "-P", str(max(1, at_once)), "-n", str(per))
    return Command((*argv, "sha256sum"), cwd=root, stdin=listing)


def processes_of(cmd: Command) -> tuple[int, int, int]:
    """Ours' processes in all, the programs it ran (git), and its forked workers."""
    procs = cmd.processes()
    if procs is None:
        raise RuntimeError("the verify rows need strace, to count verify's processes")
    ran = len(commands_run(cmd.argv)) - 1  # the first is verify itself
    return procs, ran, procs - 1 - ran


def verify_row(
    work: Path, receipts: int = RECEIPTS, rounds: int = ROUNDS, *, pinned: bool = False
) -> BenchResult:
    """One row: ``verify`` of ``receipts`` receipts against sha256sum over what it reads."""
    root = (work / f"repo-{receipts}{'-pinned' if pinned else ''}").resolve()
    t0 = time.perf_counter()
    made = make_corpus(root, receipts, pinned=pinned)
    generated = time.perf_counter() - t0
    ours_cmd = Command((tool(), "-q", "verify", "--repo-root", str(root), str(root / "reviews")))
    check = subprocess.run(ours_cmd.argv, capture_output=True, text=True)
    if check.returncode != 0:
        raise RuntimeError(f"verify failed on the benchmark corpus: {check.stderr[-2000:]}")
    files = files_opened(ours_cmd.argv, root.resolve())
    if files is None:
        raise RuntimeError("the verify rows need strace, to list the files verify reads")
    procs, ran, workers = processes_of(ours_cmd)
    base_cmd = sha256sum_side(root, files, procs, workers, work)
    ours, base = compare(ours_cmd, base_cmd, rounds)
    kinds = Counter(_kind(f) for f in files)
    ratio = ours.wall / base.wall
    return BenchResult(
        name=f"`verify` of {made:,} receipts, records {'pinned to git' if pinned else 'unpinned'}",
        limit=f"<= {LIMIT:g}x sha256sum of the files it reads, same number of processes",
        ratio=ratio,
        held=ratio <= LIMIT,
        ours=ours,
        baseline=base,
        baseline_name=f"sha256sum over the {len(files):,} files verify read, via xargs -P",
        rounds=rounds,
        commands=[
            ours_cmd.shown().replace(str(root), "$REPO"),
            base_cmd.shown() + "   # the files verify opened, NUL-separated",
        ],
        details=[
            ("CPU time, ours / sha256sum", f"{ours.cpu / base.cpu:.2f}x"),
            (
                "processes (strace)",
                f"ours: verify, {workers} forked workers, {ran} programs run (git); baseline: "
                f"xargs and {procs - 1} sha256sum, {max(1, workers)} at a time",
            ),
            ("files verify opened under the repository (strace)", _kinds(kinds)),
        ],
        notes=[
            f"{made:,} receipts with request records ({ANSWER_BYTES:,}-byte answers), chains "
            f"of {'/'.join(map(str, sorted(set(CHAIN_LENGTHS))))} segments over 3 shared "
            "context files; every prompt is rebuilt and hashed.",
            f"Corpus written by the tool's own pipeline in {generated:.1f} s (not timed).",
            "The baseline reads exactly the files verify opened (listed once under strace, "
            "before timing), with the same number of processes in all and as many at once "
            "as verify has workers.",
        ],
    )


def _kind(path: Path) -> str:
    name = path.name
    for suffix in (".receipt.json", ".request.json", ".md"):
        if name.endswith(suffix):
            return suffix
    return "other"


def _kinds(kinds: Counter[str]) -> str:
    return ", ".join(f"{n:,} {k}" for k, n in sorted(kinds.items()))


def run(work: Path, rounds: int = ROUNDS) -> list[BenchResult]:
    return [
        verify_row(work, RECEIPTS, rounds, pinned=True),
        verify_row(work, RECEIPTS, rounds),
    ]


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="dsr-bench-verify-") as tmp:
        rows = run(Path(tmp))
    for r in rows:
        print(f"{r.name}: {r.ratio:.2f}x ({'held' if r.held else 'BROKEN'} {r.limit})")
