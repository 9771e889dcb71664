"""``batch``: 200 streamed reviews, ``--jobs 8``, against a simulator serving 8 at a time.

Ours is the whole ``deepseek-review batch`` command as a user runs it (start-up, checking and
planning the manifest, 200 streamed requests, 600 files written with fsync, the report), each
round into a fresh output folder. The baseline is :mod:`benchmarks.bare_batch`, a bare
8-thread http.client client sending the same 200 request bodies (the exact bytes our batch
sent, context included, rebuilt from its request records), reading each stream to its end and
writing nothing. An untimed pass against a recording simulator shows both send the same
multiset of bodies. The simulator (its own process) answers each request in 200 ms, 8 at a
time: 200 x 0.2 s / 8 = 5 s is the ideal, shown as context only. The stack's floor,
:mod:`benchmarks.floor_batch` (the bare client's work with typer parsing its command line and
one httpx client sending under tenacity), is timed against both: what the stack alone costs
the row, and what ours costs beyond it. :mod:`benchmarks.floor_planned` is that floor sending
the bodies our own planning makes (``api.plan_batch``, as ``batch`` checks and plans every
entry before its first request): what the stack costs with the work ours must finish before it
may send anything, and nothing ours does around each request.
"""

from __future__ import annotations

import functools
import itertools
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import (
    BenchResult,
    Command,
    Runnable,
    Sample,
    Side,
    SimulatorProcess,
    compare,
    recorded_bodies,
    seconds,
    tool,
)
from benchmarks.inside import ours_share

HERE = Path(__file__).resolve().parent
N_REVIEWS = 200
JOBS = 8
LATENCY = 0.2
CAPACITY = 8
ANSWER_WORDS = 120
GOAL = 1.06
ROUNDS = 5
ARRIVAL_ROUNDS = 3

#: Where ours' time before its first request goes: the wall time inside each of these in one
#: run (patched before anything imports them by name), in the order a batch reaches them.
SPANS = (
    ("deepseek_review.batch.manifest_file", "read_manifest", "reading and checking the manifest"),
    ("deepseek_review.reviewing.plan", "plan_review", "planning an entry"),
    (
        "deepseek_review.batch.plan",
        "prepare_batch",
        "the manifest read, checked and every entry planned (the two above included)",
    ),
    ("deepseek_review.git.runner", "_run_git", "git run (the repository, each glob's files)"),
)

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
        return Command((sys.executable, "-m", "deepseek_review", *self.args(out)), self.root)

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


def floor(url: str, bodies: Path) -> Command:
    argv = (sys.executable, str(HERE / "floor_batch.py"), url + "/v1/chat/completions")
    return Command((*argv, str(JOBS), str(bodies)))


def planned_floor(root: Path, url: str) -> Command:
    """The stack's floor with ours' planning, run in the repository (its output folder is
    checked, never written)."""
    argv = (sys.executable, str(HERE / "floor_planned.py"), "reviews.toml")
    return Command((*argv, url + "/v1/chat/completions", str(JOBS), "planned-out"), root)


def same_bodies(root: Path, bodies: Path, work: Path) -> list[list[str]]:
    """Each side (ours, the bare client, the stack's floor, the floor with ours' planning)
    once against a recording simulator (no latency): the bodies' sha256."""
    flags = ("--capacity", str(CAPACITY), "--answer-words", str(ANSWER_WORDS))
    sides: list[Callable[[str], Runnable]] = [
        lambda u: Batch(root, u, "check"),
        lambda u: bare(u, bodies),
        lambda u: floor(u, bodies),
        lambda u: planned_floor(root, u),
    ]
    return [
        recorded_bodies(*flags, send=functools.partial(_send, side), work=work) for side in sides
    ]


def _send(side: Callable[[str], Runnable], url: str) -> None:
    side(url).run()


def arrivals(
    root: Path, bodies: Path, work: Path, rounds: int = ARRIVAL_ROUNDS, reviews: int = N_REVIEWS
) -> dict[str, tuple[float, float, float]]:
    """Each side (the bare client, the stack's floor, that floor with ours' planning, ours) run
    ``rounds`` times against one simulator that notes when each request arrives, the order
    rotated each round: the medians, per side, of seconds from its start to its first request,
    from its first request to its last, and from its last request to its exit."""
    stamps_file = work / f"arrivals-{time.monotonic_ns()}.txt"
    flags = ("--latency", str(LATENCY), "--capacity", str(CAPACITY))
    windows: list[tuple[str, float, float]] = []
    with SimulatorProcess(*flags, "--answer-words", str(ANSWER_WORDS), arrivals=stamps_file) as sim:
        sides: dict[str, Runnable] = {
            "bare client": bare(sim.base_url, bodies),
            "the stack's floor": floor(sim.base_url, bodies),
            "the floor with ours' planning": planned_floor(root, sim.base_url),
            "ours": Batch(root, sim.base_url, "arrive"),
        }
        names = list(sides)
        for r in range(rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                start = time.time()
                sides[name].run()
                windows.append((name, start, time.time()))
    stamps = [float(line) for line in stamps_file.read_text(encoding="ascii").split()]
    phases: dict[str, list[tuple[float, float, float]]] = {}
    for name, start, end in windows:
        inside = sorted(s for s in stamps if start <= s <= end)
        if len(inside) != reviews:
            raise RuntimeError(f"{name}: {len(inside)} requests arrived, not {reviews}")
        phases.setdefault(name, []).append(
            (inside[0] - start, inside[-1] - inside[0], end - inside[-1])
        )
    return {name: _medians(runs) for name, runs in phases.items()}


def _medians(runs: list[tuple[float, float, float]]) -> tuple[float, float, float]:
    first, steady, tail = zip(*runs, strict=True)
    return statistics.median(first), statistics.median(steady), statistics.median(tail)


def arrivals_text(found: dict[str, tuple[float, float, float]]) -> str:
    return "; ".join(
        f"{name} {first:.3f} / {steady:.3f} / {tail:.3f} s"
        for name, (first, steady, tail) in found.items()
    )


def room_text(floor_ratio: float, bare_wall: float, ours_more: float, first_lag: float) -> str:
    """What the goal leaves ours beyond the stack's floor, next to what ours takes beyond it:
    the whole run's difference, and the part of it before the first request."""
    room = (GOAL - floor_ratio) * bare_wall
    return (
        f"({GOAL} - {floor_ratio:.3f}) x the bare client's {bare_wall:.3f} s = "
        f"{room * 1000:.0f} ms; ours took {ours_more * 1000:.0f} ms more than the floor, "
        f"{first_lag * 1000:.0f} ms of it before its first request"
    )


def _verdict(ratio: float) -> str:
    """Whether the goal is left any room once the stack has done ours' planning."""
    if ratio > GOAL:
        return f"over the {GOAL}x goal before ours does anything around a request"
    return f"within the {GOAL}x goal: what ours does around its requests decides the row"


def before_first_request(root: Path, url: str, bodies: Path) -> tuple[str, str, str]:
    """Ours' share beyond the floor (:func:`~benchmarks.inside.ours_share`) with :data:`SPANS`:
    the spans, whose module loads cost what, and the modules only one side loads."""
    ours = Batch(root, url, "inside")
    floor_argv = floor(url, bodies).argv[1:]
    return ours_share(lambda: [tool(), *ours.args()], floor_argv, root, SPANS, "floor_batch.py")


def run(work: Path, rounds: int = ROUNDS, reviews: int = N_REVIEWS) -> BenchResult:
    root = work / "batch-repo"
    root.mkdir(parents=True)
    make_repo(root, reviews)
    flags = ["--latency", str(LATENCY), "--capacity", str(CAPACITY)]
    with SimulatorProcess(*flags, "--answer-words", str(ANSWER_WORDS)) as sim:
        ours_side = Batch(root, sim.base_url, "out")
        ours_side.run()  # warm-up, and the request records the baseline's bodies come from
        sent = write_bodies(root, "out-0", work / "bodies")
        ours_bodies, bare_bodies, floor_bodies, planned_bodies = same_bodies(
            root, work / "bodies", work
        )
        if (
            not ours_bodies == bare_bodies == floor_bodies == planned_bodies
            or len(ours_bodies) != reviews != sent
        ):
            raise RuntimeError(f"the sides sent different bodies ({sent} records)")
        baseline = bare(sim.base_url, work / "bodies")
        stack = floor(sim.base_url, work / "bodies")
        ours, base = compare(ours_side, baseline, rounds)
        floor_side, floor_base = compare(stack, baseline, rounds)
        planning = planned_floor(root, sim.base_url)
        planned_side, planned_base = compare(planning, baseline, rounds)
        ours_again, floor_again = compare(ours_side, stack, rounds)
        spans, split, modules = before_first_request(root, sim.base_url, work / "bodies")
    phases = arrivals(root, work / "bodies", work, reviews=reviews)
    ratio = ours.wall / base.wall
    return BenchResult(
        name=f"batch: {reviews} reviews, --jobs {JOBS}, streamed, 200 ms latency, capacity 8",
        goal=f"<= {GOAL}x a bare {JOBS}-thread http.client client sending the same requests",
        ratio=ratio,
        met=ratio <= GOAL,
        ours=ours,
        baseline=base,
        baseline_name=f"bare {JOBS}-thread http.client client, same {reviews} bodies, streamed",
        rounds=rounds,
        commands=[
            ours_side.command("out-N").shown(),
            baseline.shown(),
            stack.shown(),
            f"(in the repository) {planning.shown()}",
        ],
        details=[
            *_details(
                reviews,
                (ours, base),
                (floor_side, floor_base),
                (planned_side, planned_base),
                (ours_again, floor_again),
                phases,
            ),
            ("ours before its first request (wall time inside, one run)", spans),
            ("ours' imports by whose module (self times, one run, each load timed)", split),
        ],
        notes=_notes(ours_bodies, modules),
    )


def _details(
    reviews: int,
    ours_bare: tuple[Side, Side],
    floor_bare: tuple[Side, Side],
    planned_bare: tuple[Side, Side],
    ours_floor: tuple[Side, Side],
    phases: dict[str, tuple[float, float, float]],
) -> list[tuple[str, str]]:
    """The row's other figures: against the ideal, the stack's floor with and without ours'
    planning, ours' own share, and when the requests arrived."""
    ours, base = ours_bare
    floor_side, floor_base = floor_bare
    planned_side, planned_base = planned_bare
    ours_again, floor_again = ours_floor
    ideal = reviews * LATENCY / CAPACITY
    floor_ratio = floor_side.wall / floor_base.wall
    planned_ratio = planned_side.wall / planned_base.wall
    return [
        (f"ideal {reviews} x {LATENCY} s / {CAPACITY} (context only)", f"{ideal:g} s"),
        ("ours / ideal", f"{ours.wall / ideal:.2f}x"),
        ("bare client / ideal", f"{base.wall / ideal:.2f}x"),
        (
            "the stack's floor (floor_batch.py: the bare client's work with typer, one "
            "httpx client and tenacity) vs the bare client",
            f"{floor_ratio:.3f}x ({seconds(floor_side)} vs {seconds(floor_base)})",
        ),
        (
            "the stack's floor with ours' planning (floor_planned.py: the floor sending the "
            "bodies ours plans, after checking the manifest and planning every entry as "
            "ours must before its first request; no pre-flight, nothing written) vs the "
            "bare client",
            f"{planned_ratio:.3f}x ({seconds(planned_side)} vs "
            f"{seconds(planned_base)}); {_verdict(planned_ratio)}",
        ),
        (
            "ours vs the stack's floor: our own share",
            f"{ours_again.wall / floor_again.wall:.3f}x ({seconds(ours_again)} vs "
            f"{seconds(floor_again)}; {ours_again.wall - floor_again.wall:.3f} s wall, "
            f"{ours_again.cpu - floor_again.cpu:.3f} s CPU more)",
        ),
        (
            "when each side's requests reached the simulator (medians of "
            f"{ARRIVAL_ROUNDS} runs each, order rotated): start to first request / first "
            "to last request / last request to exit",
            arrivals_text(phases),
        ),
        (
            "the goal's room beyond the stack's floor (its ratio and wall above), against "
            "ours' wall beyond the floor (above) and its first request's lag behind the "
            "floor's (the arrivals above)",
            room_text(
                floor_ratio,
                floor_base.wall,
                ours_again.wall - floor_again.wall,
                phases["ours"][0] - phases["the stack's floor"][0],
            ),
        ),
    ]


def _notes(ours_bodies: list[str], modules: str) -> list[str]:
    """How the sides were checked to do the same work, and which modules only one loads."""
    return [
        "Same work, checked before timing: a recording simulator received "
        f"{len(ours_bodies)} bodies from each side (ours, the bare client, the stack's "
        "floor, the floor with ours' planning), the same sha256 multiset "
        f"({len(set(ours_bodies))} distinct bodies: {len(_CONTEXTS)} contexts x "
        "different prompts).",
        "Each round of ours writes into a fresh output folder (an existing one would be "
        "resumed and skipped).",
        modules,
    ]
