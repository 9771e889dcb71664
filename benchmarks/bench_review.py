"""One review end to end against an instant local server, next to the seed emitter's way.

Ours is ``deepseek-review run`` as users run it (streamed, the default), a fresh process
against the bundled simulator with no latency. The baseline is :mod:`benchmarks.stdlib_review`,
a stdlib script doing what the seed emitter does (one request, an answer file, a receipt),
built from our own request record so that it sends the very same body bytes; the seed does not
stream, so the headline baseline reads a plain JSON answer and a second pair compares the two
on the same streamed body. ``curl`` posting the identical body is the floor of any client.
The floor of our stack is measured twice: ``python -c "import typer, httpx, tenacity"`` (its
imports alone) and :data:`FLOOR_SCRIPT`, a minimal typer + httpx + tenacity script doing the
stdlib script's work (the identical streamed body, the answer, a receipt). An untimed check
pass against a recording simulator first shows every side sends the same body (sha256).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks.common import (
    BenchResult,
    Command,
    Side,
    SimulatorProcess,
    compare,
    git_init,
    import_profile,
    profile_text,
    recorded_bodies,
    seconds,
    tool,
)
from benchmarks.inside import ours_share
from benchmarks.strace import time_in

HERE = Path(__file__).resolve().parent
ROUNDS = 11
SYNCS = ("fsync", "fdatasync")
GOAL = 1.7
ANSWER_WORDS = "300"
STACK_IMPORTS = "import typer, httpx, tenacity"

#: The stack's floor doing the request: the stdlib script itself (its body, its answer and
#: receipt files, its SSE reader), with typer parsing the arguments and its one request sent by
#: an ``httpx.Client`` under a ``tenacity`` retry loop instead of ``urllib``. Like ours it
#: builds no CA bundle for plain http and ends with ``os._exit`` after a flushed success.
#: Argv: BENCHMARKS_DIR SKELETON URL OUT_DIR.
FLOOR_SCRIPT = '''"""The stack's floor: the stdlib script's work with typer, httpx and tenacity."""

import os
import ssl
import sys

import httpx
import tenacity
import typer

sys.path.insert(0, sys.argv.pop(1))  # benchmarks/, for the stdlib script
import stdlib_review  # noqa: E402

no_ca = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # plain http: no CA bundle to load
client = httpx.Client(timeout=600, verify=no_ca)


class Answer:
    """An httpx response as the stdlib script reads urlopen's: read(), lines, a context."""

    def __init__(self, resp):
        self.resp = resp

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.resp.close()

    def read(self):
        return self.resp.read()

    def __iter__(self):
        return (line.encode() + b"\\n" for line in self.resp.iter_lines())


def urlopen(req, timeout):
    for attempt in tenacity.Retrying(stop=tenacity.stop_after_attempt(3), reraise=True):
        with attempt:
            sent = client.build_request(
                "POST", req.full_url, content=req.data, headers=dict(req.header_items())
            )
            resp = client.send(sent, stream=True)
            resp.raise_for_status()
            return Answer(resp)


def main(skeleton: str, url: str, out_dir: str) -> None:
    stdlib_review.urllib.request.urlopen = urlopen
    sys.argv[1:] = [skeleton, url, out_dir]
    stdlib_review.main()
    sys.stdout.flush()
    os._exit(0)  # as ours after a flushed success: no interpreter teardown


typer.run(main)
'''


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
        self.stack_imports = Command((sys.executable, "-c", STACK_IMPORTS), repo)
        floor = [sys.executable, str(work / "floor_review.py"), str(HERE)]
        floor += [str(work / "skeleton-stream.json"), chat, str(work / "floor-out")]
        self.floor = Command((*floor,), repo)


#: Where ours' time goes besides imports: the wall time spent inside each of these functions in
#: one run (patched before anything imports them by name), in the order a run reaches them.
SPANS = (
    ("deepseek_review.git.runner", "_run_git", "git processes"),
    (
        "deepseek_review.reviewing.segment",
        "write_segment",
        "answer, record and receipt written and fsynced",
    ),
    ("deepseek_review.ollama.fit", "preflight", "the Ollama pre-flight (3 requests)"),
    (
        "deepseek_review.chat.client",
        "ChatClient._attempt",
        "the chat request and its streamed answer",
    ),
    ("deepseek_review.reviewing.plan", "plan_review", "planning once imported"),
)


def share(sides: Sides, repo: Path) -> tuple[str, str, str]:
    """Ours' share beyond the floor (:func:`~benchmarks.inside.ours_share`) with :data:`SPANS`:
    the spans (the wall time inside each, as one line), whose module loads cost what, and the
    modules only one side loads."""
    floor_argv = sides.floor.argv[1:]
    return ours_share(lambda: sides.ours.argv, floor_argv, repo, SPANS, "floor_review.py")


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
    """The skeletons of both ways (streamed or not), the streamed body curl posts, and the
    floor script with its output folder."""
    keep_request(sides.ours_plain, repo, work / "skeleton-plain.json")
    body = keep_request(sides.ours, repo, work / "skeleton-stream.json")
    (work / "body-stream.json").write_bytes(body)
    (work / "floor_review.py").write_text(FLOOR_SCRIPT, encoding="utf-8")
    (work / "floor-out").mkdir(exist_ok=True)


def same_bodies(work: Path, repo: Path, files: list[str]) -> dict[str, list[str]]:
    """Each side run once against a recording simulator: the sha256 of the bodies it sent."""
    sent: dict[str, list[str]] = {}
    for name in ("ours", "seed_streamed", "curl", "floor", "ours_plain", "seed"):

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
        sent = _same_work(work, repo, files)
        ours, seed = compare(sides.ours, sides.seed, rounds)
        pairs = {
            "streamed": compare(sides.ours, sides.seed_streamed, rounds),
            "plain": compare(sides.ours_plain, sides.seed, rounds),
            "curl": compare(sides.ours, sides.curl, rounds),
            "stack": compare(sides.stack_imports, sides.seed, rounds),
            "floor": compare(sides.floor, sides.seed, rounds),
            "share": compare(sides.ours, sides.floor, rounds),
        }
        imports = import_profile(sides.ours.argv[1:], repo)
        spans, split, modules = share(sides, repo)
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
            sides.stack_imports.shown(),
            sides.floor.shown(),
        ],
        details=[
            ("ours' imports (one run under `python -X importtime`)", profile_text(imports)),
            ("ours' imports by whose module (self times, one run, each load timed)", split),
            ("ours' work besides imports (wall time inside, one run)", spans),
            (
                "ours' durability syncs (one run under `strace -T`)",
                "strace unavailable"
                if syncs is None
                else f"{syncs[0]} fsync/fdatasync calls, {syncs[1]:.3f} s inside them",
            ),
            *_comparisons(pairs),
        ],
        notes=_notes(len(files), body_bytes, sent, modules),
    )


def _same_work(work: Path, repo: Path, files: list[str]) -> dict[str, list[str]]:
    """The sha256 of the bodies each side sent, after checking that the streamed sides sent
    one and the same body, and so did the sides that do not stream."""
    sent = same_bodies(work, repo, files)
    streamed = (sent["ours"], sent["seed_streamed"], sent["curl"], sent["floor"])
    if not (all(s == sent["ours"] for s in streamed) and len(sent["ours"]) == 1):
        raise RuntimeError(f"the streamed sides sent different bodies: {sent}")
    if not (sent["ours_plain"] == sent["seed"] and len(sent["seed"]) == 1):
        raise RuntimeError(f"the non-streamed sides sent different bodies: {sent}")
    return sent


def _comparisons(pairs: dict[str, tuple[Side, Side]]) -> list[tuple[str, str]]:
    """The row's other comparisons: streamed, not streamed, against curl, and the stack's
    imports and floor against the stdlib script, and ours against that floor."""
    ours2, seed_streamed = pairs["streamed"]
    plain, seed2 = pairs["plain"]
    ours3, curl = pairs["curl"]
    stack, seed3 = pairs["stack"]
    floor, seed4 = pairs["floor"]
    ours4, floor2 = pairs["share"]
    return [
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
        (
            f"the stack's imports alone (`python -c '{STACK_IMPORTS}'`, interpreter "
            "teardown included) vs the stdlib script (not streamed)",
            f"{stack.wall / seed3.wall:.2f}x ({seconds(stack)} vs {seconds(seed3)})",
        ),
        (
            "the stack's floor (floor_review.py: a minimal typer + httpx + tenacity script "
            "streaming the identical body, writing the answer and a receipt) vs the stdlib "
            "script (not streamed)",
            f"{floor.wall / seed4.wall:.2f}x ({seconds(floor)} vs {seconds(seed4)})",
        ),
        (
            "ours streamed vs the stack's floor (floor_review.py, same body): our own share",
            f"{ours4.wall / floor2.wall:.2f}x ({seconds(ours4)} vs {seconds(floor2)}; "
            f"{(ours4.wall - floor2.wall) * 1000:.0f} ms wall, "
            f"{(ours4.cpu - floor2.cpu) * 1000:.0f} ms CPU more)",
        ),
    ]


def _notes(files: int, body_bytes: int, sent: dict[str, list[str]], modules: str) -> list[str]:
    """What the row measured, how the sides were checked to do the same work, and what
    ours does that the stdlib script does not."""
    return [
        f"{files} context files; the request body is {body_bytes:,} bytes; the "
        f"simulator (its own process) answers {ANSWER_WORDS} words at once.",
        "Same work, checked before timing: a recording simulator received one body from "
        f"each side; streamed (ours, the stdlib script, curl, floor_review.py): sha256 "
        f"{sent['ours'][0][:16]}…, all equal; not streamed (ours, the stdlib script): "
        f"{sent['seed'][0][:16]}…, equal.",
        "What differs: ours also asks git about the repository, asks the server (an "
        "Ollama, as the simulator says it is) what context the model runs with before "
        "sending, writes a request record, fsyncs its three files, checks paths, sizes and "
        "text, validates the receipt and retries on failure; the stdlib script writes the "
        "answer and the receipt and does nothing else. Its framing (the template text) "
        "comes from our request record, as the seed's lives in its own source.",
        modules,
    ]
