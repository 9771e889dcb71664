"""The batch row's account of where ours' time goes, at a tiny size: when each side's requests
reach the simulator, every span of ours' work before its first request is reached (so a
renamed function cannot silently drop out of the document), and what ours loads beyond the
stack's floor."""

from __future__ import annotations

import re
import time
from pathlib import Path

from benchmarks import bench_batch
from benchmarks.common import SimulatorProcess

REVIEWS = 6


def _repo_and_bodies(tmp_path: Path, url: str) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    root.mkdir()
    bench_batch.make_repo(root, REVIEWS)
    bench_batch.Batch(root, url, "out").run()
    assert bench_batch.write_bodies(root, "out-0", tmp_path / "bodies") == REVIEWS
    return root, tmp_path / "bodies"


def test_recording_simulator_notes_when_each_chat_request_arrives(tmp_path: Path) -> None:
    stamps = tmp_path / "arrivals.txt"
    with SimulatorProcess(arrivals=stamps) as sim:
        _, bodies = _repo_and_bodies(tmp_path, sim.base_url)
        start = time.time()
        bench_batch.bare(sim.base_url, bodies).run()
        end = time.time()
    arrived = [float(line) for line in stamps.read_text(encoding="ascii").split()]
    assert len(arrived) == 2 * REVIEWS  # ours' run, then the bare client's
    assert arrived == sorted(arrived)
    assert all(start <= t <= end for t in arrived[REVIEWS:])


def test_batch_row_times_each_sides_first_request_steady_run_and_tail(tmp_path: Path) -> None:
    with SimulatorProcess() as sim:
        root, bodies = _repo_and_bodies(tmp_path, sim.base_url)
    phases = bench_batch.arrivals(root, bodies, tmp_path, rounds=1, reviews=REVIEWS)
    assert list(phases) == [
        "bare client",
        "the stack's floor",
        "the floor with ours' planning",
        "ours",
    ]
    for first, steady, tail in phases.values():
        assert first > 0 and steady >= 0 and tail > 0
    assert re.fullmatch(
        r"bare client [\d.]+ / [\d.]+ / [\d.]+ s; the stack's floor [\d.]+ / [\d.]+ / [\d.]+ s; "
        r"the floor with ours' planning [\d.]+ / [\d.]+ / [\d.]+ s; "
        r"ours [\d.]+ / [\d.]+ / [\d.]+ s",
        bench_batch.arrivals_text(phases),
    )


def test_batch_row_accounts_for_ours_before_its_first_request(tmp_path: Path) -> None:
    with SimulatorProcess() as sim:
        root, bodies = _repo_and_bodies(tmp_path, sim.base_url)
        spans, split, modules = bench_batch.before_first_request(root, sim.base_url, bodies)
    for _, _, label in bench_batch.SPANS:
        assert re.search(re.escape(label) + r"( \(\d+ calls\))? \d+\.\d ms", spans), spans
        assert f"{label} 0.0 ms" not in spans
    assert f"planning an entry ({REVIEWS} calls)" in spans
    assert re.fullmatch(r"our \d+ modules \d+ ms \(of which building their \d+ dataclasses "
                        r"\d+ ms\); everything else it loads \d+ ms", split)  # fmt: skip
    assert re.search(r"only in ours: our own \d+ and ", modules)
    assert "floor_batch.py" in modules


def test_room_beyond_the_floor_is_the_goal_minus_the_floors_ratio_times_the_bare_client() -> None:
    text = bench_batch.room_text(1.045, 5.6, 0.38, 0.326)
    assert text == (
        "(1.06 - 1.045) x the bare client's 5.600 s = 84 ms; ours took 380 ms more than the "
        "floor, 326 ms of it before its first request"
    )


def test_floor_with_ours_planning_over_the_goal_is_said_to_leave_no_room() -> None:
    assert bench_batch._verdict(1.072) == (
        "over the 1.06x goal before ours does anything around a request"
    )
    assert bench_batch._verdict(1.05) == (
        "within the 1.06x goal: what ours does around its requests decides the row"
    )
