"""``deepseek-review --version`` against ``python -c pass``: what start-up alone costs.

The goal is absolute (the issue's): the version printed within 0.03 s on this machine. Both
are fresh processes of the same venv interpreter, timed in alternating pairs; the bare
interpreter is the floor any Python command pays, shown next to ours.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.common import (
    BenchResult,
    Command,
    compare,
    import_profile,
    profile_text,
    seconds,
    tool,
)

ROUNDS = 21
GOAL_SECONDS = 0.03


def run(work: Path, rounds: int = ROUNDS) -> BenchResult:
    ours_cmd = Command((tool(), "--version"), work)
    bare = Command((sys.executable, "-c", "pass"), work)
    ours, base = compare(ours_cmd, bare, rounds)
    imports = import_profile(["--version"], work)
    return BenchResult(
        name="`deepseek-review --version`",
        goal=f"<= {GOAL_SECONDS} s (absolute)",
        ratio=ours.wall / base.wall,
        met=ours.wall <= GOAL_SECONDS,
        ours=ours,
        baseline=base,
        baseline_name="`python -c pass`, the same interpreter",
        rounds=rounds,
        commands=[ours_cmd.shown(), bare.shown()],
        details=[
            ("ours (the goal is about this figure)", seconds(ours)),
            ("ours minus the bare interpreter", f"{ours.wall - base.wall:.3f} s wall"),
            ("ours' imports (one run under `python -X importtime`)", profile_text(imports)),
        ],
    )
