"""``batch``: 200 streamed reviews, ``--jobs 8``, against a simulator serving 8 at a time.

Ours is the whole ``deepseek-review batch`` command as a user runs it (start-up, checking and
planning the manifest, 200 streamed requests, 600 files written with fsync, the report), each
round into a fresh output folder. The simulator (its own process) answers each request after
200 ms and serves 8 at once, so no client can finish sooner than the ideal: the 200 requests in
ceil(200 / 8) = 25 waves of 8, each wave 0.2 s, 5 s in all. The guard: ours' median wall time at
most 1.12x that ideal.

The ideal is computed, not measured. Beside it, as context, :mod:`benchmarks.bare_batch`, a bare
8-thread http.client client, sends the same 200 request bodies (the exact bytes our batch sent,
context included, rebuilt from its request records), reads each stream to its end and writes
nothing: what this machine and this simulator allow a client with no work of its own. An
untimed pass against a recording simulator checks both send the same multiset of bodies.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

from benchmarks.common import (
    BenchResult,
    Command,
    Sample,
    SimulatorProcess,
    compare,
    recorded_bodies,
    seconds,
    tool,
)

HERE = Path(__file__).resolve().parent
N_REVIEWS = 200
JOBS = 8
LATENCY = 0.2
CAPACITY = 8
ANSWER_WORDS = 120
LIMIT = 1.12
ROUNDS = 5

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


def make_repo(root: Path, reviews: int = N_REVIEWS) -> Path:
    for rel, text in _FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    lines = ["[defaults]", 'model = "deepseek-v4-flash"', "max_tokens = 2048", ""]
    for i in range(reviews):
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


class Batch:
    """Our side: the batch command, each run into a new output folder (a folder already
    written would be resumed: every review skipped)."""

    def __init__(self, root: Path, url: str, name: str) -> None:
        self.root, self.url, self.name = root, url, name
        self.count = itertools.count()

    def command(self, out: str | None = None) -> Command:
        return Command((tool(), *self.args(out)), self.root)

    def args(self, out: str | None = None) -> list[str]:
        """The command line after the program's name."""
        out = out or f"{self.name}-{next(self.count)}"
        args = ["--quiet", "batch", "reviews.toml", "--jobs", str(JOBS), "--endpoint", self.url]
        return [*args, "--output-dir", out, "--report", f"{out}.report.json"]

    def run(self) -> Sample:
        return self.command().run()

    def processes(self) -> int | None:
        return self.command().processes()


def write_bodies(root: Path, out: str, bodies: Path) -> int:
    """The exact bodies a finished batch sent, one file each; how many."""
    from deepseek_review.records.rebuild import rebuild_body, repo_reader

    bodies.mkdir()
    records = sorted((root / out).glob("*.request.json"))
    for i, record in enumerate(records):
        rebuilt = rebuild_body(json.loads(record.read_bytes())["body"], repo_reader(root))
        assert rebuilt.body_bytes is not None, record
        (bodies / f"{i:05d}.json").write_bytes(rebuilt.body_bytes)
    return len(records)


def bare(url: str, bodies: Path) -> Command:
    argv = (sys.executable, str(HERE / "bare_batch.py"), url + "/v1/chat/completions")
    return Command((*argv, str(JOBS), str(bodies)))


def ideal(reviews: int) -> float:
    """What a perfect client takes: the server serves :data:`CAPACITY` requests at once, each
    for :data:`LATENCY` seconds, so ``reviews`` requests need ceil(reviews / CAPACITY) waves."""
    return math.ceil(reviews / CAPACITY) * LATENCY


def same_bodies(root: Path, bodies: Path, work: Path) -> tuple[list[str], list[str]]:
    """Ours, then the bare client, once each against a recording simulator (no latency): the
    sha256 of the bodies each sent."""
    flags = ("--capacity", str(CAPACITY), "--answer-words", str(ANSWER_WORDS))

    def ours(url: str) -> None:
        Batch(root, url, "check").run()

    def base(url: str) -> None:
        bare(url, bodies).run()

    return (
        recorded_bodies(*flags, send=ours, work=work),
        recorded_bodies(*flags, send=base, work=work),
    )


def run(work: Path, rounds: int = ROUNDS, reviews: int = N_REVIEWS) -> BenchResult:
    root = work / "batch-repo"
    root.mkdir(parents=True)
    make_repo(root, reviews)
    flags = ["--latency", str(LATENCY), "--capacity", str(CAPACITY)]
    with SimulatorProcess(*flags, "--answer-words", str(ANSWER_WORDS)) as sim:
        ours_side = Batch(root, sim.base_url, "out")
        ours_side.run()  # warm-up, and the request records the bare client's bodies come from
        sent = write_bodies(root, "out-0", work / "bodies")
        ours_bodies, bare_bodies = same_bodies(root, work / "bodies", work)
        if ours_bodies != bare_bodies or not len(ours_bodies) == sent == reviews:
            raise RuntimeError(f"the sides sent different bodies ({sent} records)")
        baseline = bare(sim.base_url, work / "bodies")
        ours, base = compare(ours_side, baseline, rounds)
    best = ideal(reviews)
    ratio = ours.wall / best
    return BenchResult(
        name=f"batch: {reviews} reviews, --jobs {JOBS}, {LATENCY * 1000:.0f} ms latency, "
        f"capacity {CAPACITY}",
        limit=f"<= {LIMIT}x the ideal ({reviews} / {CAPACITY} x {LATENCY} s = {best:g} s)",
        ratio=ratio,
        held=ratio <= LIMIT,
        ours=ours,
        baseline=base,
        baseline_name=f"bare {JOBS}-thread http.client client, same {reviews} bodies (context)",
        rounds=rounds,
        commands=[ours_side.command("out-N").shown(), baseline.shown()],
        details=[
            ("ideal", f"ceil({reviews} / {CAPACITY}) waves x {LATENCY} s = {best:g} s"),
            ("ours / ideal (the guard)", f"{ratio:.3f}x ({seconds(ours)})"),
            ("bare client / ideal", f"{base.wall / best:.3f}x ({seconds(base)})"),
            ("ours / bare client", f"{ours.wall / base.wall:.3f}x"),
        ],
        notes=[
            "The ratio is ours' median wall time over the ideal, which is computed: the "
            "simulator serves at most 8 requests at once, each after 200 ms.",
            "Same work, checked before timing: a recording simulator received "
            f"{len(ours_bodies)} bodies from each side, the same sha256 multiset "
            f"({len(set(ours_bodies))} distinct bodies: {len(_CONTEXTS)} contexts x "
            "different prompts).",
            "Each round of ours writes into a fresh output folder (an existing one would be "
            "resumed and skipped).",
        ],
    )
