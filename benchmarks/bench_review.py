"""One review end to end against an instant local server, next to the seed emitter's way.

Ours is ``deepseek-review run`` as users run it (streamed, the default), a fresh process
against the bundled simulator with no latency. The baseline is :mod:`benchmarks.stdlib_review`,
a stdlib script doing what the seed emitter does (one request, an answer file, a receipt),
built from our own request record so that it sends the very same body bytes; the seed does not
stream, so the headline baseline reads a plain JSON answer and a second pair compares the two
on the same streamed body. ``curl`` posting the identical body is the floor. An untimed check
pass against a recording simulator first shows every side sends the same body (sha256).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks.common import (
    BenchResult,
    Command,
    SimulatorProcess,
    compare,
    git_init,
    import_profile,
    profile_text,
    recorded_bodies,
    seconds,
    tool,
)
from benchmarks.strace import time_in

HERE = Path(__file__).resolve().parent
ROUNDS = 11
SYNCS = ("fsync", "fdatasync")
GOAL = 1.7
ANSWER_WORDS = "300"


def make_repo(root: Path, files: int = 4) -> list[str]:
    """A repository with ``files`` Python modules of 240 lines; their paths."""
    root.mkdir()
    git_init(root)
    names = []
    for i in range(files):
        rel = f"src/module_{i}.py"
        path = root / rel
        path.parent.mkdir(exist_ok=True)
        path.write_text(
            "".join(f"def f{j}(x):\n    return x * {j}  # line {j}\n" for j in range(120))
        )
        names.append(rel)
    return names


class Sides:
    """The commands of this row, for one server URL."""

    def __init__(self, work: Path, repo: Path, files: list[str], base_url: str) -> None:
        chat = base_url + "/v1/chat/completions"
        run = [tool(), "-q", "run", "--endpoint", base_url, "-p", "Review these files."]
        for f in files:
            run += ["-c", f]
        self.ours = Command((*run,), repo)
        self.ours_plain = Command((*run, "--no-stream"), repo)
        out = work / "stdlib-out"
        out.mkdir(exist_ok=True)
        script = [sys.executable, str(HERE / "stdlib_review.py")]
        self.seed = Command((*script, str(work / "skeleton-plain.json"), chat, str(out)), repo)
        self.seed_streamed = Command(
            (*script, str(work / "skeleton-stream.json"), chat, str(out)), repo
        )
        curl = ["curl", "-sS", "--fail", "-H", "Content-Type: application/json"]
        curl += ["--data-binary", f"@{work / 'body-stream.json'}", "-o", "/dev/null", chat]
        self.curl = Command((*curl,), repo)


def keep_request(cmd: Command, repo: Path, skeleton: Path) -> bytes:
    """Run ``cmd`` (a ``run`` of ours) once; keep its request record's body at ``skeleton``
    (what the stdlib script fills in) and return the exact body bytes it sent."""
    from deepseek_review.records.rebuild import rebuild_body, repo_reader

    cmd.run()
    records = sorted((repo / "reviews").glob("*.request.json"), key=lambda p: p.stat().st_mtime)
    body = json.loads(records[-1].read_text(encoding="utf-8"))["body"]
    skeleton.write_text(json.dumps(body), encoding="utf-8")
    rebuilt = rebuild_body(body, repo_reader(repo))
    assert rebuilt.body_bytes is not None
    return rebuilt.body_bytes


def prepare(work: Path, repo: Path, sides: Sides) -> None:
    """The skeletons of both ways (streamed or not), and the streamed body curl posts."""
    keep_request(sides.ours_plain, repo, work / "skeleton-plain.json")
    body = keep_request(sides.ours, repo, work / "skeleton-stream.json")
    (work / "body-stream.json").write_bytes(body)


def same_bodies(work: Path, repo: Path, files: list[str]) -> dict[str, list[str]]:
    """Each side run once against a recording simulator: the sha256 of the bodies it sent."""
    sent: dict[str, list[str]] = {}
    for name in ("ours", "seed_streamed", "curl", "ours_plain", "seed"):

        def send(url: str, name: str = name) -> None:
            getattr(Sides(work, repo, files, url), name).run()

        sent[name] = recorded_bodies("--answer-words", ANSWER_WORDS, send=send, work=work)
    return sent


def run(work: Path, rounds: int = ROUNDS, n_files: int = 4) -> BenchResult:
    repo = work / "repo"
    files = make_repo(repo, n_files)
    with SimulatorProcess("--answer-words", ANSWER_WORDS) as sim:
        sides = Sides(work, repo, files, sim.base_url)
        prepare(work, repo, sides)
        sent = same_bodies(work, repo, files)
        if not (sent["ours"] == sent["seed_streamed"] == sent["curl"] and len(sent["ours"]) == 1):
            raise RuntimeError(f"the streamed sides sent different bodies: {sent}")
        if not (sent["ours_plain"] == sent["seed"] and len(sent["seed"]) == 1):
            raise RuntimeError(f"the non-streamed sides sent different bodies: {sent}")
        ours, seed = compare(sides.ours, sides.seed, rounds)
        ours2, seed_streamed = compare(sides.ours, sides.seed_streamed, rounds)
        plain, seed2 = compare(sides.ours_plain, sides.seed, rounds)
        ours3, curl = compare(sides.ours, sides.curl, rounds)
        imports = import_profile(sides.ours.argv[1:], repo)
        syncs = time_in(sides.ours.argv, SYNCS, cwd=repo)
    body_bytes = (work / "body-stream.json").stat().st_size
    ratio = ours.wall / seed.wall
    return BenchResult(
        name="one `run` against an instant local server",
        goal=f"<= {GOAL}x the seed emitter's way (a stdlib script)",
        ratio=ratio,
        met=ratio <= GOAL,
        ours=ours,
        baseline=seed,
        baseline_name="a stdlib script doing what the seed emitter does; not streamed, as the seed",
        rounds=rounds,
        commands=[
            sides.ours.shown(),
            sides.seed.shown(),
            sides.seed_streamed.shown(),
            sides.ours_plain.shown(),
            sides.curl.shown(),
        ],
        details=[
            ("ours' imports (one run under `python -X importtime`)", profile_text(imports)),
            (
                "ours' durability syncs (one run under `strace -T`)",
                "strace unavailable"
                if syncs is None
                else f"{syncs[0]} fsync/fdatasync calls, {syncs[1]:.3f} s inside them",
            ),
            (
                "ours streamed vs the stdlib script streaming the same body",
                f"{ours2.wall / seed_streamed.wall:.2f}x ({seconds(ours2)} vs "
                f"{seconds(seed_streamed)})",
            ),
            (
                "ours `--no-stream` vs the stdlib script (both not streamed)",
                f"{plain.wall / seed2.wall:.2f}x ({seconds(plain)} vs {seconds(seed2)})",
            ),
            (
                "ours streamed vs curl posting the identical body (the floor)",
                f"{ours3.wall / curl.wall:.2f}x ({seconds(ours3)} vs {seconds(curl)})",
            ),
        ],
        notes=[
            f"{len(files)} context files; the request body is {body_bytes:,} bytes; the "
            f"simulator (its own process) answers {ANSWER_WORDS} words at once.",
            "Same work, checked before timing: a recording simulator received one body from "
            f"each side; streamed (ours, the stdlib script, curl): sha256 "
            f"{sent['ours'][0][:16]}…, all equal; not streamed (ours, the stdlib script): "
            f"{sent['seed'][0][:16]}…, equal.",
            "What differs: ours also writes a request record, fsyncs its three files, checks "
            "paths, sizes and text, validates the receipt and retries on failure; the stdlib "
            "script writes the answer and the receipt and does nothing else. Its framing "
            "(the template text) comes from our request record, as the seed's lives in its "
            "own source.",
        ],
    )
