"""The review row's floor and its account of ours' share, at a tiny size: the stack's floor
loads nothing ours does not except the stdlib script it wraps, and every span of ours' work
is reached by a run (so a renamed function cannot silently drop out of the document)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from benchmarks import bench_review
from benchmarks.common import SimulatorProcess


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_review_row_accounts_for_what_ours_does_beyond_the_stacks_floor(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    files = bench_review.make_repo(repo, 2)
    with SimulatorProcess() as sim:
        sides = bench_review.Sides(tmp_path, repo, files, sim.base_url)
        bench_review.prepare(tmp_path, repo, sides)
        spans, split, modules = bench_review.share(sides, repo)
    assert "only in the floor: stdlib_review." in modules
    assert re.search(r"only in ours: our own \d+ and ", modules)
    for _, _, label in bench_review.SPANS:
        assert re.search(re.escape(label) + r"( \(\d+ calls\))? \d+\.\d ms", spans), spans
        assert f"{label} 0.0 ms" not in spans
    assert re.fullmatch(r"our \d+ modules \d+ ms \(of which building their \d+ dataclasses "
                        r"\d+ ms\); everything else it loads \d+ ms", split)  # fmt: skip
