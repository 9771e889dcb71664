"""`make bench`: measure every guard and write docs/contributing/benchmarks.md.

Usage: python -m benchmarks [NAME ...]   (names: the bench_<name>.py modules; default all)
"""

from __future__ import annotations

import importlib
import os
import platform
import re
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.common import BenchResult, seconds

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "contributing" / "benchmarks.md"
ORDER = [
    "review",
    "version",
    "batch",
    "pool",
    "verify",
    "memory",
    "gather",
    "split",
    "sign",
    "cache",
]


def available() -> list[str]:
    names = [p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py")]
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


_WORK = re.compile(re.escape(tempfile.gettempdir()) + r"/dsr-bench-[^/\s']+")
_SIM = re.compile(r"http://127\.0\.0\.1:\d{4,5}")


def _shorter(command: str) -> str:
    """A command as the document shows it: the run's temporary folder as $WORK, the
    simulator's URL as $SIM, this checkout as ."""
    command = _WORK.sub("$WORK", command).replace(str(HERE.parent) + "/", "")
    return _SIM.sub("$SIM", command)


def filesystem(path: str) -> str:
    """The type of the filesystem ``path`` is on (from /proc/mounts; "unknown" elsewhere):
    fsync costs nothing on tmpfs and milliseconds on a disk."""
    try:
        mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return "unknown"
    best = max((m for m in mounts if path == m[0] or path.startswith(m[0].rstrip("/") + "/")),
               key=lambda m: len(m[0]), default=["", "unknown"])  # fmt: skip
    return best[1]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render(results: list[tuple[str, BenchResult | None, str]], elapsed: float) -> str:
    """docs/benchmarks.md: how the rows are measured, the table of every row, then a section
    for each."""
    lines = _preamble(elapsed) + _table(results)
    for name, r, err in results:
        lines += _section(name, r, err)
    return "\n".join(lines) + "\n"


def _preamble(elapsed: float) -> list[str]:
    """Where and when the run was made, and how every row is measured."""
    return [
        "# Benchmarks",
        "",
        f"Written by `make bench` (`python -m benchmarks`) on "
        f"{datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}, "
        f"{platform.system()} {platform.machine()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; work files on {filesystem(tempfile.gettempdir())} "
        f"({tempfile.gettempdir()}); the whole run took {elapsed:.0f} s.",
        "",
        "The rows are guards, not goals (issue #31): each has a limit it must stay within.",
        "How a row is measured: ours and a baseline doing the same work (checked before",
        "timing, e.g. the same request body sha256 or the same files read) run as fresh",
        "processes in pairs, ours first in even rounds and the baseline first in odd ones;",
        "each side's figure is the median of its rounds. Wall time is what the ratio and the",
        "limit are about unless the row says else (`--version` against an absolute time, the",
        "batch against a computed ideal, memory against the request body, signing a count);",
        "CPU time is user + system of the whole process tree (wait4), and `proc` is the",
        "number of processes the side uses in all, counted under `strace -f` (threads not",
        "counted). This machine is shared, so the ratio of one run is the result and",
        "absolute times are context. Every number below comes from this run.",
        "",
    ]


def _table(results: list[tuple[str, BenchResult | None, str]]) -> list[str]:
    """One row per guard, then how many held."""
    lines = [
        "| guard | limit | ratio | held | ours | baseline | rounds |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r, err in results:
        if r is None:
            lines.append(f"| {name} | — | failed | **no** | — | {_cell(err)} | — |")
            continue
        cells = [
            r.name,
            r.limit,
            f"{r.ratio:.3f}x",
            "yes" if r.held else "**no**",
            seconds(r.ours, memory=r.memory),
            _baseline(r),
            str(r.rounds),
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    done = [r for _, r, _ in results if r is not None]
    broken = [r.name for r in done if not r.held]
    return [
        *lines,
        "",
        f"Guards held: {len(done) - len(broken)} of {len(results)}"
        + (f"; not held: {'; '.join(broken)}." if broken else "."),
    ]


def _baseline(r: BenchResult) -> str:
    """The baseline's figures and what it is; only its name where none is timed."""
    if r.baseline is None:
        return r.baseline_name
    return f"{seconds(r.baseline, memory=r.memory)} ({r.baseline_name})"


def _section(name: str, r: BenchResult | None, err: str) -> list[str]:
    """One guard's section: its figures, details, notes and the commands timed."""
    lines = ["", f"## {r.name if r else name}", ""]
    if r is None:
        return [*lines, "The benchmark failed:", "", "```", err, "```"]
    baseline = (
        f"baseline ({r.baseline_name}) {seconds(r.baseline, memory=r.memory)}; medians of "
        f"{r.rounds} alternating pairs"
        if r.baseline is not None
        else f"no baseline ({r.baseline_name}); {r.rounds} run"
    )
    lines.append(
        f"Limit: {r.limit}. Measured: **{r.ratio:.3f}x** ({'held' if r.held else 'not held'}); "
        f"ours {seconds(r.ours, memory=r.memory)}; {baseline}."
    )
    if r.details:
        lines.append("")
        lines += [f"- {label}: {value}" for label, value in r.details]
    if r.notes:
        lines.append("")
        lines += [f"- {n}" for n in r.notes]
    if r.commands:
        lines += ["", "Commands timed:", "", "```"]
        lines += [_shorter(c) for c in r.commands]
        lines.append("```")
    return lines


def _compile_package() -> None:
    """Byte-compile the package, as `pip install` does for a wheel: an editable checkout run
    with PYTHONDONTWRITEBYTECODE=1 (as on this machine) would otherwise recompile every module
    of ours in every process and time that instead of the tool."""
    import compileall

    compileall.compile_dir(str(HERE.parent / "deepseek_review"), quiet=1)


def report(name: str, r: BenchResult) -> None:
    """One row's result on the terminal, as it is measured."""
    base = "none" if r.baseline is None else seconds(r.baseline)
    print(
        f"   {r.name}: ratio {r.ratio:.3f}x ({r.limit}) -> {'held' if r.held else 'NOT HELD'}; "
        f"ours {seconds(r.ours)}; baseline {base}",
        flush=True,
    )
    for label, value in r.details:
        print(f"   {label}: {value}", flush=True)


def main(argv: list[str]) -> int:
    _compile_package()
    names = argv or available()
    unknown = sorted(set(names) - set(available()))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; have: {', '.join(available())}")
        return 2
    results: list[tuple[str, BenchResult | None, str]] = []
    t0 = time.perf_counter()
    for name in names:
        print(f"== bench {name}", flush=True)
        module = importlib.import_module(f"benchmarks.bench_{name}")
        with tempfile.TemporaryDirectory(prefix=f"dsr-bench-{name}-") as work:
            try:
                got: BenchResult | list[BenchResult] = module.run(Path(work))
            except Exception:
                err = traceback.format_exc()
                print(err, file=sys.stderr)
                results.append((name, None, err.strip().splitlines()[-1]))
                continue
        for r in got if isinstance(got, list) else [got]:
            report(name, r)
            results.append((name, r, ""))
    elapsed = time.perf_counter() - t0
    if not argv:
        DOC.write_text(render(results, elapsed), encoding="utf-8")
        print(f"wrote {DOC.relative_to(HERE.parent)}")
    else:
        print("(a subset was run: docs/contributing/benchmarks.md is only written by a full run)")
    return 0 if all(r is not None for _, r, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
