"""``batch`` over two servers: 80 reviews, 200 ms latency, two simulators serving 4 at a time.

Ours is ``deepseek-review batch --jobs 8`` with ``--endpoint`` given once for each of two
simulators (their own processes, each serving 4 requests at once after 200 ms); the baseline
is the same command with ``--jobs 4`` and one of them, as a user with one server runs it.
Each round writes into a fresh output folder. The guard: ours' median wall time at most 0.6x
the baseline's (the ideal is 0.5x: 10 waves of 8 against 20 waves of 4).

Measured once beside it, not timed: the share of the answers each server gave (both must
give >= 30%), that a re-run of the same folder sends nothing, and that with one of two
servers killed mid-batch (``--die-after 20``) every entry still finishes, on the other.
"""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from pathlib import Path

from benchmarks.bench_batch import make_repo
from benchmarks.common import (
    BenchResult,
    Command,
    Sample,
    SimulatorProcess,
    compare,
    seconds,
    tool,
)

N_REVIEWS = 80
LATENCY = 0.2
CAPACITY = 4
ANSWER_WORDS = 120
LIMIT = 0.6
ROUNDS = 5
SHARE = 0.3


class Batch:
    """One side: the batch over ``urls`` with ``jobs``, each run into a fresh output folder."""

    def __init__(self, root: Path, urls: list[str], jobs: int, name: str) -> None:
        self.root, self.urls, self.jobs, self.name = root, urls, jobs, name
        self.count = 0

    def command(self, out: str) -> Command:
        servers = [w for url in self.urls for w in ("--endpoint", url)]
        argv = (tool(), "--quiet", "batch", "reviews.toml", "--jobs", str(self.jobs), *servers)
        return Command((*argv, "--output-dir", out, "--report", f"{out}.report.json"), self.root)

    def next_out(self) -> str:
        self.count += 1
        return f"{self.name}-{self.count}"

    def run(self) -> Sample:
        return self.command(self.next_out()).run()

    def processes(self) -> int | None:
        return self.command(self.next_out()).processes()


def chat_requests(url: str) -> int:
    with urllib.request.urlopen(url + "/_sim/stats", timeout=10) as r:
        count: int = json.load(r)["chat_requests"]
    return count


def served(root: Path, out: str) -> Counter[str]:
    """The receipts of a finished batch by the server each names."""
    return Counter(
        json.loads(p.read_text(encoding="utf-8"))["endpoint"]
        for p in (root / out).glob("*.receipt.json")
    )


def killed(root: Path) -> tuple[str, tuple[int, int], int]:
    """One pool batch with a server that dies after 20 requests: its status, the receipts by
    server (0 dead, 1 living) and how many entries are ok."""
    flags = ("--latency", str(LATENCY), "--capacity", str(CAPACITY))
    with (
        SimulatorProcess(*flags, "--die-after", "20") as dying,
        SimulatorProcess(*flags) as living,
    ):
        side = Batch(root, [dying.base_url, living.base_url], 8, "killed")
        cmd = side.command("killed")
        Command((*cmd.argv, "--max-attempts", "2"), root).run()
        report = json.loads((root / "killed.report.json").read_text(encoding="utf-8"))
        ok = report["counts"]["ok"]
        by = served(root, "killed")
        return report["status"], (by[dying.chat_url], by[living.chat_url]), ok


def run(work: Path, rounds: int = ROUNDS, reviews: int = N_REVIEWS) -> BenchResult:
    root = work / "pool-repo"
    root.mkdir(parents=True)
    make_repo(root, reviews)
    flags = ("--latency", str(LATENCY), "--capacity", str(CAPACITY))
    words = ("--answer-words", str(ANSWER_WORDS))
    with SimulatorProcess(*flags, *words) as a, SimulatorProcess(*flags, *words) as b:
        ours_side = Batch(root, [a.base_url, b.base_url], 8, "pool")
        base_side = Batch(root, [a.base_url], 4, "one")
        ours_side.command("warm").run()  # warm-up, and the folder the checks read
        by = served(root, "warm")
        before = chat_requests(a.base_url) + chat_requests(b.base_url)
        ours_side.command("warm").run()  # the re-run: everything is skipped
        resent = chat_requests(a.base_url) + chat_requests(b.base_url) - before
        ours, base = compare(ours_side, base_side, rounds)
    status, dead_living, ok = killed(root)
    shares = [by[a.chat_url] / reviews, by[b.chat_url] / reviews]
    ratio = ours.wall / base.wall
    held = ratio <= LIMIT and min(shares) >= SHARE and resent == 0 and ok == reviews
    return BenchResult(
        name=f"batch over two servers: {reviews} reviews, --jobs 8, {LATENCY * 1000:.0f} ms "
        f"latency, capacity {CAPACITY} each",
        limit=f"<= {LIMIT}x one server with --jobs 4; each server >= {SHARE:.0%} of the "
        "answers; a re-run sends nothing; one server killed: every entry finishes",
        ratio=ratio,
        held=held,
        ours=ours,
        baseline=base,
        baseline_name=f"the same batch, --jobs 4, one server of capacity {CAPACITY}",
        rounds=rounds,
        commands=[ours_side.command("pool-N").shown(), base_side.command("one-N").shown()],
        details=[
            ("ours / one server (the guard)", f"{ratio:.3f}x ({seconds(ours)})"),
            ("answers by server", f"{shares[0]:.0%} and {shares[1]:.0%}"),
            ("requests sent by a re-run of a finished folder", str(resent)),
            (
                "one server killed after 20 requests",
                f"batch {status}, {ok} of {reviews} ok; receipts: {dead_living[0]} from "
                f"the dead server, {dead_living[1]} from the living one",
            ),
        ],
        notes=[
            "The ideal is 0.5x: the pool serves 8 at once, one server 4, each request 200 ms.",
            "The simulators run in their own processes; each round writes a fresh folder.",
        ],
    )
