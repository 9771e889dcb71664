"""What every benchmark returns, and how it times things.

Machines are shared and noisy, so a benchmark never reports a bare duration as its result: it
runs our command and a baseline side by side, interleaved, several times in one process, and
reports the ratio of their medians. The absolute times are shown too, for context only.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class BenchResult:
    name: str
    """Short title, e.g. "verify 10,000 receipts"."""
    goal: str
    """The goal as the issue states it, e.g. "<= 2x sha256sum"."""
    ratio: float
    """ours / baseline (medians); what the goal is about."""
    met: bool
    ours_seconds: float
    baseline_seconds: float
    baseline: str
    """What the baseline is, in words."""
    commands: list[str] = field(default_factory=list)
    """The exact commands timed (ours and the baseline), for docs/benchmarks.md."""
    notes: list[str] = field(default_factory=list)
    extra: dict[str, float] = field(default_factory=dict)
    """Other figures worth reporting (e.g. ratio to a second baseline)."""
    unit: str = "s"
    """Unit of ``ours_seconds``/``baseline_seconds`` (``MB`` for the memory benchmark)."""


def time_call(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_command(argv: Sequence[str], **kwargs: object) -> float:
    """Wall time of one command, which must succeed."""
    t0 = time.perf_counter()
    subprocess.run(list(argv), check=True, stdout=subprocess.DEVNULL, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - t0


def interleaved(
    ours: Callable[[], float], baseline: Callable[[], float], rounds: int = 5
) -> tuple[float, float]:
    """Medians of ``rounds`` alternating runs of each (each callable returns its seconds)."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(rounds):
        a.append(ours())
        b.append(baseline())
    return statistics.median(a), statistics.median(b)


def tool() -> str:
    """The installed ``deepseek-review`` console script of the running interpreter's venv."""
    import sys
    from pathlib import Path

    return str(Path(sys.executable).parent / "deepseek-review")


class SimulatorProcess:
    """The simulator in its own process, so it never competes for our GIL."""

    def __init__(self, *flags: str) -> None:
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deepseek_review.simulator", "--port", "0", "--quiet", *flags],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        self.base_url = line.rsplit(" ", 1)[-1]
        if not self.base_url.startswith("http://127.0.0.1:"):
            self.proc.kill()
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


def git_init(root: object) -> None:
    subprocess.run(["git", "init", "-q"], cwd=str(root), check=True)
