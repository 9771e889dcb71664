"""``deepseek-review --version``: what start-up alone costs.

The guard is absolute: the version printed within 0.1 s on this machine. ``python -c pass``
(the same venv interpreter, a fresh process too) is timed in alternating pairs beside it, as
context: the floor any Python command pays.
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
    tool,
)

ROUNDS = 21
LIMIT_SECONDS = 0.1


def run(work: Path, rounds: int = ROUNDS) -> BenchResult:
    ours_cmd = Command((tool(), "--version"), work)
    bare = Command((sys.executable, "-c", "pass"), work)
    ours, base = compare(ours_cmd, bare, rounds)
    imports = import_profile(["--version"], work)
    return BenchResult(
        name="`deepseek-review --version`",
        limit=f"<= {LIMIT_SECONDS:g} s (absolute)",
        ratio=ours.wall / LIMIT_SECONDS,
        held=ours.wall <= LIMIT_SECONDS,
        ours=ours,
        baseline=base,
        baseline_name="`python -c pass`, the same interpreter (context)",
        rounds=rounds,
        commands=[ours_cmd.shown(), bare.shown()],
        details=[
            ("ours minus the bare interpreter", f"{ours.wall - base.wall:.3f} s wall"),
            ("ours' imports (one run under `python -X importtime`)", profile_text(imports)),
        ],
        notes=["The ratio is ours' median wall time over the 0.1 s limit."],
    )
