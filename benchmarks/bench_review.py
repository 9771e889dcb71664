"""One review end to end against an instant local server, next to a stdlib script.

Ours is ``deepseek-review run`` as users run it (streamed, the default), a fresh process
against the bundled simulator with no latency. The baseline is :mod:`benchmarks.stdlib_review`,
a stdlib script making the same request (one POST, the answer read as it streams, an answer
file and a receipt), built from our own request record so that it sends the very same body
bytes: an untimed pass against a recording simulator checks both sent one body, the same
sha256, before anything is timed. The guard: ours at most 3x the script.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
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
    tool,
)

HERE = Path(__file__).resolve().parent
ROUNDS = 11
LIMIT = 3.0
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


def sides(work: Path, repo: Path, files: list[str], base_url: str) -> tuple[Command, Command]:
    """Ours (``run``, streamed) and the stdlib script sending the body ours' record holds."""
    run = [tool(), "-q", "run", "--endpoint", base_url, "-p", "Review these files."]
    for f in files:
        run += ["-c", f]
    out = work / "stdlib-out"
    out.mkdir(exist_ok=True)
    script = [sys.executable, str(HERE / "stdlib_review.py"), str(work / "skeleton.json")]
    chat = base_url + "/v1/chat/completions"
    return Command((*run,), repo), Command((*script, chat, str(out)), repo)


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


def same_bodies(work: Path, repo: Path, files: list[str]) -> list[list[str]]:
    """Ours, then the stdlib script, once each against a recording simulator: the sha256 of
    the bodies each sent."""

    def sender(which: int) -> Callable[[str], object]:
        return lambda url: sides(work, repo, files, url)[which].run()

    return [
        recorded_bodies("--answer-words", ANSWER_WORDS, send=sender(w), work=work) for w in (0, 1)
    ]


def run(work: Path, rounds: int = ROUNDS, n_files: int = 4) -> BenchResult:
    repo = work / "repo"
    files = make_repo(repo, n_files)
    with SimulatorProcess("--answer-words", ANSWER_WORDS) as sim:
        ours_cmd, script = sides(work, repo, files, sim.base_url)
        body = keep_request(ours_cmd, repo, work / "skeleton.json")
        sent = same_bodies(work, repo, files)
        if sent[0] != sent[1] or len(sent[0]) != 1:
            raise RuntimeError(f"ours and the stdlib script sent different bodies: {sent}")
        ours, base = compare(ours_cmd, script, rounds)
        imports = import_profile(ours_cmd.argv[1:], repo)
    ratio = ours.wall / base.wall
    return BenchResult(
        name="one `run` against an instant local server",
        limit=f"<= {LIMIT:g}x a stdlib script making the same request",
        ratio=ratio,
        held=ratio <= LIMIT,
        ours=ours,
        baseline=base,
        baseline_name="benchmarks/stdlib_review.py, the same body, streamed",
        rounds=rounds,
        commands=[ours_cmd.shown(), script.shown()],
        details=[
            ("ours minus the script", f"{(ours.wall - base.wall) * 1000:.0f} ms wall"),
            ("ours' imports (one run under `python -X importtime`)", profile_text(imports)),
        ],
        notes=[
            f"{len(files)} context files; the request body is {len(body):,} bytes; the "
            f"simulator (its own process) answers {ANSWER_WORDS} words at once.",
            "Same work, checked before timing: a recording simulator received one body from "
            f"each side, the same sha256 ({sent[0][0][:16]}…).",
            "What differs: ours also asks git about the repository, asks the server (an "
            "Ollama, as the simulator says it is) what context the model runs with before "
            "sending, writes a request record, fsyncs its three files, checks paths, sizes and "
            "text, validates the receipt and retries on failure; the script writes the "
            "answer and the receipt and does nothing else.",
        ],
    )
