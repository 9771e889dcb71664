"""`make demo`: a whole review against the bundled simulator, truncation and continuation included.

Creates a small git repository under ``demo-out/<stamp>/``, starts the simulator (a test
double of Ollama's OpenAI-compatible endpoint, not a model) on a free port, and runs the real
command line against it, printing each command as it goes:

1. ``run`` with a small token cap, so the answer is cut off and continued automatically;
2. the files written, and the primary receipt;
3. ``verify`` over the receipts (when the installed version has it);
4. ``show``, which prints the stitched answer after checking every segment's hash;
5. ``findings``: the answer's findings block exported as SARIF (for GitHub code scanning) and
   as a Markdown step summary.
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


def banner(text: str) -> None:
    print(f"\n\033[1m== {text}\033[0m" if sys.stdout.isatty() else f"\n== {text}", flush=True)


def sh(args: list[str], cwd: Path, *, check_codes: tuple[int, ...] = (0,)) -> str:
    shown = " ".join(shlex.quote(a) for a in ["deepseek-review", *args[1:]])
    print(f"$ {shown}", flush=True)
    proc = subprocess.run(args, cwd=cwd, text=True, stdout=subprocess.PIPE)
    if proc.stdout:
        print(proc.stdout, end="" if proc.stdout.endswith("\n") else "\n", flush=True)
    if proc.returncode not in check_codes:
        raise SystemExit(f"demo: command failed with exit code {proc.returncode}")
    return proc.stdout


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
            "deepseek_review.simulator",
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


def main() -> int:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    root = HERE / "demo-out" / stamp
    make_repo(root)
    banner(f"demo repository: {root.relative_to(HERE)}")
    for p in sorted(root.rglob("*")):
        if p.is_file() and ".git" not in p.parts:
            print(f"  {p.relative_to(root)}")

    sim, url = start_simulator()
    banner(f"simulator (a test double, not a model) listening on {url}")
    try:
        banner("1. run a review with a small token cap: it is cut off and continued")
        out = sh(
            [
                TOOL,
                "run",
                "--context",
                "docs/spec.md",
                "--context",
                "src/**/*.py",
                "--template",
                "spec-review",
                "--topic",
                "window_stats",
                "--prompt",
                "Check the arithmetic in the spec against the code.",
                "--endpoint",
                url,
                "--max-tokens",
                "120",
                "--max-continuations",
                "3",
                "--findings",
                "--json",
            ],
            root,
        )
        result = json.loads(out)
        segments = result["segments"]
        print(
            f"-> {len(segments)} segments, finish reasons "
            f"{[s['finish_reason'] for s in segments]}, status {result['status']}"
        )

        banner("2. the files written")
        for p in sorted((root / "reviews").iterdir()):
            print(f"  reviews/{p.name}  ({p.stat().st_size} bytes)")
        banner("the primary receipt")
        print((root / segments[0]["receipt_path"]).read_text(encoding="utf-8"), end="")
        banner("the last continuation receipt")
        print((root / segments[-1]["receipt_path"]).read_text(encoding="utf-8"), end="")

        help_text = subprocess.run([TOOL, "--help"], text=True, capture_output=True).stdout
        if " verify " in help_text:
            banner("3. verify every receipt without re-running the model")
            sh([TOOL, "verify", "reviews"], root)

        banner("4. show the stitched answer (every segment's hash checked first)")
        text = sh([TOOL, "show", segments[0]["answer_path"]], root)
        ends = text.rstrip().splitlines()[-1] if text.strip() else ""
        print(
            f"-> {len(text)} characters stitched from {len(segments)} segments; last line: {ends!r}"
        )

        banner("5. the findings block, exported for CI (SARIF for code scanning, a summary)")
        sh([TOOL, "findings", "reviews", "--format", "sarif", "-o", "review.sarif"], root)
        sarif = json.loads((root / "review.sarif").read_text(encoding="utf-8"))
        results = sarif["runs"][0]["results"]
        print(f"-> review.sarif: SARIF {sarif['version']}, {len(results)} result(s)")
        for r in results:
            where = r["locations"][0]["physicalLocation"]
            region = where.get("region", {})
            print(
                f"   {r['level']}: {where['artifactLocation']['uri']}:"
                f"{region.get('startLine', '-')} {r['ruleId']} "
                f"(fingerprint {next(iter(r['partialFingerprints'].values()))[:12]})"
            )
        sh([TOOL, "findings", "reviews", "--format", "markdown"], root)
    finally:
        sim.terminate()
        sim.wait(timeout=10)
    banner(f"done: everything above is in {root.relative_to(HERE)}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    if shutil.which("git") is None:
        raise SystemExit("demo: git is needed to create the demo repository")
    sys.exit(main())
