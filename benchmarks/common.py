"""What every guard returns, and how it times things.

The machine is shared and noisy, so a guard is a ratio wherever it can be: it runs our command
and a baseline doing the same work side by side, in pairs whose order alternates from round to
round, and compares the medians. Each run is a fresh
process, timed for wall time and for CPU time (user + system of the process and every child
it waited for, from ``wait4``), and each side's number of processes is counted once (under
``strace``), so a comparison of 3 processes with 1 says so.
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True)
class Sample:
    """One fresh process: wall seconds, CPU seconds (itself and its children), peak RSS."""

    wall: float
    cpu: float
    max_rss: int
    """Peak resident set of the largest process of the tree, in bytes; only measured (not 0)
    for a :class:`Command` with ``peak`` (see :func:`run_command`)."""


@dataclass(frozen=True)
class Side:
    """The medians of one side of a comparison, and how many processes that side uses."""

    wall: float
    cpu: float
    max_rss: int
    """Median over the rounds of the peak resident set, in bytes."""
    processes: int | None = None
    samples: tuple[Sample, ...] = ()

    @classmethod
    def of(cls, samples: Sequence[Sample], processes: int | None = None) -> Side:
        return cls(
            wall=statistics.median(s.wall for s in samples),
            cpu=statistics.median(s.cpu for s in samples),
            max_rss=int(statistics.median(s.max_rss for s in samples)),
            processes=processes,
            samples=tuple(samples),
        )


@dataclass
class BenchResult:
    name: str
    """Short title, e.g. "`verify` of 10,000 receipts"."""
    limit: str
    """The guard as the issue states it, e.g. "<= 3x sha256sum of the files it reads"."""
    ratio: float
    """What the limit is about: ours / baseline (medians of wall time) unless it says else."""
    held: bool
    ours: Side
    baseline: Side | None
    """The side ours is compared with; None where the limit is computed, not measured."""
    baseline_name: str
    """What the baseline is, in words."""
    rounds: int
    commands: list[str] = field(default_factory=list)
    """The exact commands timed (ours and the baseline), for docs/contributing/benchmarks.md."""
    notes: list[str] = field(default_factory=list)
    details: list[tuple[str, str]] = field(default_factory=list)
    """Other measured figures of this run (label, value), e.g. where ours' time goes."""
    memory: bool = False
    """The guard is about peak memory: the sides are shown with their peak resident set."""


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: Path | None = None,
    peak: bool = False,
) -> Sample:
    """Run one command, which must succeed; its wall time, CPU time and (``peak``) peak RSS.

    ``wait4`` gives the rusage of the child together with every descendant it waited for, so
    a shell pipeline or a pool of workers is counted whole. Its ``ru_maxrss`` is no use here:
    a child forked from this (large) process starts with this process's resident set as its
    peak. So with ``peak`` the command runs under ``/usr/bin/time -f %M``, a small C program
    whose child's peak is its own (a wrapper of about 2 MB, forked once, on both sides).
    """
    if peak:
        with tempfile.NamedTemporaryFile(prefix="dsr-bench-time-") as out:
            timed = ["/usr/bin/time", "-f", "%M", "-o", out.name, *argv]
            sample = run_command(timed, cwd=cwd, env=env, stdin=stdin)
            kib = int(Path(out.name).read_text(encoding="ascii").split()[-1])
        return Sample(sample.wall, sample.cpu, kib * 1024)
    stdin_file = open(stdin, "rb") if stdin is not None else subprocess.DEVNULL  # noqa: SIM115
    try:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=stdin_file,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    finally:
        if stdin is not None and not isinstance(stdin_file, int):
            stdin_file.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode != 0:
        tail = err.decode("utf-8", "replace").strip()[-2000:]
        raise RuntimeError(f"{' '.join(argv[:4])} ... exited {proc.returncode}: {tail}")
    return Sample(wall, usage.ru_utime + usage.ru_stime, 0)


def paired(
    ours: Callable[[], Sample], baseline: Callable[[], Sample], rounds: int
) -> tuple[list[Sample], list[Sample]]:
    """``rounds`` pairs, ours first in even rounds and the baseline first in odd ones, so
    neither side always runs on the cache or the CPU the other just warmed."""
    a: list[Sample] = []
    b: list[Sample] = []
    for r in range(rounds):
        if r % 2 == 0:
            a.append(ours())
            b.append(baseline())
        else:
            b.append(baseline())
            a.append(ours())
    return a, b


@dataclass(frozen=True)
class Command:
    """One side's command line, where it runs, and (optionally) its stdin file."""

    argv: tuple[str, ...]
    cwd: Path | None = None
    env: Mapping[str, str] | None = None
    stdin: Path | None = None
    peak: bool = False
    """Measure the peak resident set too (under ``/usr/bin/time``)."""

    def run(self) -> Sample:
        return run_command(self.argv, cwd=self.cwd, env=self.env, stdin=self.stdin, peak=self.peak)

    def processes(self) -> int | None:
        from benchmarks.strace import count_processes

        return count_processes(self.argv, cwd=self.cwd, env=self.env, stdin=self.stdin)

    def shown(self) -> str:
        """The command as docs/contributing/benchmarks.md shows it (the venv's paths shortened)."""
        words = ["deepseek-review" if a == tool() else a for a in self.argv]
        words = ["python" if a == sys.executable else a for a in words]
        text = shlex.join(words)
        return text if self.stdin is None else f"{text} < {self.stdin.name}"


class Runnable(Protocol):
    """A side: a :class:`Command`, or anything that runs a fresh process the same way."""

    def run(self) -> Sample: ...

    def processes(self) -> int | None: ...


def compare(ours: Runnable, baseline: Runnable, rounds: int) -> tuple[Side, Side]:
    """Both sides timed in alternating pairs, and each side's processes counted once."""
    a, b = paired(ours.run, baseline.run, rounds)
    return Side.of(a, ours.processes()), Side.of(b, baseline.processes())


def import_profile(args: Sequence[str], cwd: Path | str | None = None) -> list[tuple[str, float]]:
    """Where ``deepseek-review ARGS`` spends its imports: one run of the console script itself
    under ``python -X importtime`` (as its shebang runs it; ``-m`` would add runpy's imports);
    each top-level import with its cumulative seconds, largest first."""
    argv = [sys.executable, "-X", "importtime", tool(), *args]
    err = subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True).stderr
    tops: list[tuple[str, float]] = []
    for line in err.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, cumulative, name = line.removeprefix("import time:").split("|", 2)
        if not name.startswith("  "):  # one space after the bar: a top-level import
            tops.append((name.strip(), int(cumulative) / 1e6))
    return sorted(tops, key=lambda t: -t[1])


def profile_text(tops: list[tuple[str, float]], shown: int = 6) -> str:
    """An import profile as one line: the total and the largest few."""
    total = sum(t for _, t in tops)
    largest = ", ".join(f"{name} {t * 1000:.0f} ms" for name, t in tops[:shown])
    return f"{total:.3f} s in {len(tops)} top-level imports; largest: {largest}"


def tool() -> str:
    """The installed ``deepseek-review`` console script of the running interpreter's venv."""
    return str(Path(sys.executable).parent / "deepseek-review")


def seconds(side: Side, *, memory: bool = False) -> str:
    """A side as the tables show it: wall and CPU medians, its processes, and (``memory``)
    its peak resident set."""
    procs = "?" if side.processes is None else str(side.processes)
    text = f"{side.wall:.3f} s wall, {side.cpu:.3f} s CPU, {procs} proc"
    return f"{text}, peak {side.max_rss / 1e6:.1f} MB" if memory else text


class SimulatorProcess:
    """The simulator in its own process, so it never competes for our GIL.

    With ``record``, it runs through :mod:`benchmarks.simrecord`, which writes the sha256 of
    every chat request body it received to that file when it is stopped.
    """

    def __init__(self, *flags: str, record: Path | None = None) -> None:
        argv = [sys.executable, "-m", "deepseek_review.testing.simulator"]
        if record is not None:
            argv = [sys.executable, "-m", "benchmarks.simrecord", "--record", str(record)]
        self.proc = subprocess.Popen(
            [*argv, "--port", "0", "--quiet", *flags],
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        self.base_url = line.rsplit(" ", 1)[-1]
        if not self.base_url.startswith("http://127.0.0.1:"):
            self.proc.kill()
            self.proc.wait()
            self.proc.stdout.close()
            raise RuntimeError(f"the simulator did not start: {line!r}")
        self.chat_url = self.base_url + "/v1/chat/completions"

    def __enter__(self) -> SimulatorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def recorded_bodies(*flags: str, send: Callable[[str], object], work: Path) -> list[str]:
    """The sha256 of each chat request body ``send(base_url)`` made, sorted, as a simulator
    started with ``flags`` received them: how a benchmark shows both sides sent the same."""
    record = work / f"bodies-{time.monotonic_ns()}.txt"
    with SimulatorProcess(*flags, record=record) as sim:
        send(sim.base_url)
    return sorted(record.read_text(encoding="ascii").split())


def git_init(root: object) -> None:
    subprocess.run(["git", "init", "-q"], cwd=str(root), check=True)
