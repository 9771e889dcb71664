"""`make demo`: a whole review against the bundled simulator, truncation and continuation included.

Creates a small git repository under ``demo-out/<stamp>/`` (or the folder given as the only
argument), starts the simulator (a test double of Ollama's OpenAI-compatible endpoint, not a
model) on a free port, and runs the real command line against it: ``run`` with a small token
cap (cut off, continued by itself), ``verify``, ``show`` (the stitched answer) and ``findings``
(SARIF and a Markdown summary). It prints a short account, one or two lines a step; each
command's whole output is kept in ``transcript/`` and named.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
TOOL = str(BIN / "deepseek-review")

SPEC = """\
# Window statistics spec

For a window of n = 8 samples we report the mean and the sample variance.

- The mean of 2, 4, 4, 4, 5, 5, 7, 9 is 40 / 8 = 5.
- The sample variance divides the sum of squared deviations (32) by n - 1 = 7: 32 / 7 = 4.571.
- A window is flagged when its variance exceeds 4.5, so this window is flagged.
"""

CODE = """\
def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def variance(xs: list[float]) -> float:
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / len(xs)  # population variance


def flagged(xs: list[float]) -> bool:
    return variance(xs) > 4.5
"""


class Story:
    """The demo's short account on stdout; each command's whole output in a file it names."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.transcript = root / "transcript"
        self.transcript.mkdir()

    def step(self, title: str) -> None:
        print(f"\n{title}", flush=True)

    def line(self, text: str) -> None:
        print(f"   {text}", flush=True)

    def sh(self, args: list[str], saved_as: str, *, codes: tuple[int, ...] = (0,)) -> str:
        """Run the tool as a user would; show the command, keep its stdout and stderr in
        ``transcript/<saved_as>``; its stdout."""
        shown = " ".join(shlex.quote(a) for a in ["deepseek-review", *args[1:]])
        self.line(f"$ {shown}")
        proc = subprocess.run(args, cwd=self.root, text=True, capture_output=True)
        out = self.transcript / saved_as
        out.write_text(f"$ {shown}\n{proc.stderr}{proc.stdout}", encoding="utf-8")
        if proc.returncode not in codes:
            sys.stderr.write(proc.stderr)
            raise SystemExit(f"demo: command failed with exit code {proc.returncode} ({out})")
        return proc.stdout

    def saved(self, saved_as: str) -> str:
        return _shown(self.transcript / saved_as)


def _shown(path: Path) -> str:
    """``path`` relative to the checkout when it lies inside it."""
    return str(path.relative_to(HERE)) if path.is_relative_to(HERE) else str(path)


def make_repo(root: Path) -> None:
    (root / "docs").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "docs" / "spec.md").write_text(SPEC, encoding="utf-8")
    (root / "src" / "stats.py").write_text(CODE, encoding="utf-8")
    (root / ".gitignore").write_text("__pycache__/\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)


def start_simulator() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "deepseek_review.testing.simulator",
            "--port",
            "0",
            "--quiet",
            "--answer-words",
            "260",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    url = line.rsplit(" ", 1)[-1]
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise SystemExit(f"demo: the simulator did not start ({line!r})")
    return proc, url


def _steps(story: Story, root: Path, url: str) -> None:
    """The demo's four steps against the simulator at ``url``: a review cut off and
    continued, verify, show, and findings for CI."""
    story.step("1. A review with a small token cap: cut off, then continued by itself")
    out = story.sh(
        [TOOL, "run", "-c", "docs/spec.md", "-c", "src/**/*.py", "--template", "spec-review",
         "--topic", "window_stats", "-p", "Check the arithmetic in the spec against the code.",
         "--endpoint", url, "--max-tokens", "120", "--findings", "--json"],
        "1-run.json",
    )  # fmt: skip
    result = json.loads(out)
    segments = result["segments"]
    reasons = ", ".join(s["finish_reason"] for s in segments)
    story.line(
        f"-> {len(segments)} segments ({reasons}), {result['usage']['total_tokens']:,} "
        f"tokens, status {result['status']}: {story.saved('1-run.json')}"
    )
    story.line(f"   first answer:  {segments[0]['answer_path']}")
    story.line("   each with .receipt.json (hashes, usage) and .request.json (the body)")
    for extraction in result.get("extraction", [])[-1:]:
        story.line(
            f"   findings, asked for as JSON in one more request: {extraction['findings_path']}"
        )

    story.step("2. Verify every receipt, without the model")
    story.sh([TOOL, "verify", "reviews"], "2-verify.txt")
    summary = (story.transcript / "2-verify.txt").read_text(encoding="utf-8")
    last = [ln for ln in summary.splitlines() if "receipt" in ln and "OK" in ln][-1]
    story.line(f"-> {last.removeprefix('deepseek-review: ')}")

    story.step("3. Show the stitched answer (each segment's hash checked first)")
    text = story.sh([TOOL, "show", segments[0]["answer_path"]], "3-show.md")
    story.line(
        f"-> {len(text):,} characters from {len(segments)} segments: {story.saved('3-show.md')}"
    )

    story.step("4. Findings for CI: SARIF for code scanning, a Markdown step summary")
    story.sh(
        [TOOL, "findings", "reviews", "--format", "sarif", "-o", "review.sarif"], "4-sarif.txt"
    )
    sarif = json.loads((root / "review.sarif").read_text(encoding="utf-8"))
    for r in sarif["runs"][0]["results"]:
        place = r["locations"][0]["physicalLocation"]
        line = place.get("region", {}).get("startLine", "-")
        story.line(f"-> {r['level']}: {place['artifactLocation']['uri']}:{line} {r['ruleId']}")
    story.sh([TOOL, "findings", "reviews", "--format", "markdown"], "4-summary.md")
    story.line(f"-> {story.saved('4-summary.md')}")


def main(argv: list[str]) -> int:
    """Make the demo repository in ``argv[0]`` (else a fresh folder) and tell its story."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    root = Path(argv[0]).resolve() if argv else HERE / "demo-out" / stamp
    make_repo(root)
    story = Story(root)
    where = _shown(root)
    print("deepseek-review demo: the bundled simulator stands in for the model (nothing leaves")
    print("this machine); every command's whole output is kept in the file named after it.")
    files = ", ".join(
        str(p.relative_to(root))
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts and "transcript" not in p.parts
    )
    story.line(f"repository: {where} ({files})")
    sim, url = start_simulator()
    story.line(f"simulator:  {url}")
    try:
        _steps(story, root, url)
    finally:
        sim.terminate()
        sim.wait(timeout=10)
    print(f"\nDone: everything is in {where}/ (reviews/, review.sarif, transcript/).")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if shutil.which("git") is None:
        raise SystemExit("demo: git is needed to create the demo repository")
    sys.exit(main(sys.argv[1:]))
