"""Smoke tests of `make bench` at tiny sizes, so the benchmark code cannot rot: each row's
two sides must still do the same work (the same request bodies, the same files read, the same
patch, as many processes), and one row runs whole through the document renderer."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench_batch, bench_diff, bench_gather, bench_memory, bench_review, strace
from benchmarks.__main__ import render
from benchmarks.bench_verify import make_corpus, processes_of, sha256sum_side, startup_details
from benchmarks.common import (
    Command,
    Sample,
    SimulatorProcess,
    paired,
    run_command,
    tool,
)
from benchmarks.strace import count_processes, files_opened

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")


def test_pairs_alternate_which_side_runs_first() -> None:
    order: list[str] = []

    def side(name: str) -> Sample:
        order.append(name)
        return Sample(0.0, 0.0, 0)

    paired(lambda: side("ours"), lambda: side("base"), rounds=3)
    assert order == ["ours", "base", "base", "ours", "ours", "base"]


@needs_strace
def test_process_count_sees_children_but_not_threads() -> None:
    threads = "import threading; t = threading.Thread(target=print); t.start(); t.join()"
    assert count_processes([sys.executable, "-c", threads]) == 1
    assert count_processes(["sh", "-c", "true | cat; true"]) == 3


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_review_row_stdlib_script_and_curl_send_ours_exact_body(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    files = bench_review.make_repo(repo, 2)
    with SimulatorProcess() as sim:
        bench_review.prepare(
            tmp_path, repo, bench_review.Sides(tmp_path, repo, files, sim.base_url)
        )
    sent = bench_review.same_bodies(tmp_path, repo, files)
    assert len(sent["ours"]) == 1
    assert sent["ours"] == sent["seed_streamed"] == sent["curl"] == sent["floor"]
    assert sent["ours_plain"] == sent["seed"] != sent["ours"]


def test_batch_row_bare_client_and_both_floors_send_the_batch_bodies(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    bench_batch.make_repo(root, 6)
    with SimulatorProcess() as sim:
        bench_batch.Batch(root, sim.base_url, "out").run()
    assert bench_batch.write_bodies(root, "out-0", tmp_path / "bodies") == 6
    ours, bare, floor, planned = bench_batch.same_bodies(root, tmp_path / "bodies", tmp_path)
    assert len(ours) == 6
    assert ours == bare == floor == planned


def test_floor_with_ours_planning_writes_nothing_in_the_repository(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    bench_batch.make_repo(root, 3)
    before = sorted(p.name for p in root.iterdir())
    with SimulatorProcess() as sim:
        assert bench_batch.planned_floor(root, sim.base_url).run().wall > 0
    assert sorted(p.name for p in root.iterdir()) == before


def test_floor_with_ours_planning_refuses_a_batch_that_would_not_send_every_entry(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    bench_batch.make_repo(root, 2)
    with SimulatorProcess() as sim:
        bench_batch.Batch(root, sim.base_url, "planned-out").command("planned-out").run()
        done = subprocess.run(
            bench_batch.planned_floor(root, sim.base_url).argv,
            cwd=root,
            capture_output=True,
            text=True,
        )
    assert done.returncode == 1
    assert done.stderr.strip() == "floor_planned: entry 'review-000' would skip, not be sent new"


@needs_strace
def test_verify_row_hashes_the_files_verify_read_with_as_many_processes(tmp_path: Path) -> None:
    root = (tmp_path / "repo").resolve()
    made = make_corpus(root, 12)
    ours = Command((tool(), "-q", "verify", "--repo-root", str(root), str(root / "reviews")))
    files = files_opened(ours.argv, root)
    assert files is not None
    assert sum(f.name.endswith(".receipt.json") for f in files) == made
    procs, ran_git, workers = processes_of(ours)
    assert workers == 0  # too few receipts for a pool
    assert procs == 1 + ran_git
    base = sha256sum_side(root, files, procs, workers, tmp_path)
    assert base.processes() == procs
    assert base.run().wall > 0


@needs_strace
def test_verify_start_up_note_times_the_stack_and_an_empty_verify(tmp_path: Path) -> None:
    root = (tmp_path / "repo").resolve()
    make_corpus(root, 2)
    details, commands = startup_details(root, Command(("true",)), rounds=1)
    assert commands == [
        "python -c 'import typer'",
        "deepseek-review -q verify --repo-root $REPO $REPO/no-reviews",
    ]
    assert [label.split(" (")[0] for label, _ in details] == [
        "the stack's imports alone",
        "verify of an empty folder",
    ]
    assert all("of the 3x budget" in figures for _, figures in details)


@needs_strace
def test_gather_row_ours_and_the_plain_dry_run_read_exactly_what_git_lists(
    tmp_path: Path,
) -> None:
    result = bench_gather.run(tmp_path, rounds=1, files=100)
    assert result.rounds == 1
    assert "opened exactly the 101 files `git ls-files` lists" in " ".join(result.notes)
    labels = [label for label, _ in result.details]
    assert labels[1].startswith("a plain dry run inside the stack (floor_dryrun.py")
    assert labels[2] == "ours vs that plain dry run"


@needs_strace
def test_diff_row_ours_makes_the_baselines_patch(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    a, b = bench_diff._make_repo(root, 100)
    base = Command(("git", "diff", "--full-index", f"{a}..{b}"), root)
    ours = Command((tool(), "-q", "run", "--dry-run", "--diff", f"{a}..{b}", "-p", "R"), root)
    made, size = bench_diff.same_patch(root, ours, base)
    assert made[made.index("diff-tree") + 1 : made.index("diff-tree") + 3] == ["-r", "-p"]
    assert size == len(bench_diff.patch_of(root, list(base.argv))) > 100 * 25


@pytest.mark.skipif(not Path("/usr/bin/time").exists(), reason="needs /usr/bin/time")
def test_memory_row_renders_from_a_run_of_both_sides_on_the_same_body(tmp_path: Path) -> None:
    result = bench_memory.run(tmp_path, rounds=1, context_bytes=200_000)
    assert result.ours.max_rss > 0 and result.baseline.max_rss > 0
    doc = render([("memory", result, "")], 1.0)
    assert "| peak memory, 0.190735 MB of context | <= 1.6x the request body |" in doc
    assert "received the same" in doc


def test_peak_memory_is_the_commands_own_not_the_forking_process(tmp_path: Path) -> None:
    if not Path("/usr/bin/time").exists():
        pytest.skip("needs /usr/bin/time")
    ballast = bytearray(200 * 2**20)  # this process is large; a true child is not
    small = run_command(["sh", "-c", "true"], peak=True)
    assert small.max_rss < 50 * 2**20 < len(ballast)


def test_process_count_leaves_out_a_fork_a_signal_interrupted_and_the_kernel_restarted() -> None:
    log = [
        "100 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 101",
        "100 clone(child_stack=NULL, flags=SIGCHLD) = ? ERESTARTNOINTR (To be restarted)",
        "100 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD <unfinished ...>",
        "101 +++ exited with 0 +++",
        "100 <... clone resumed>) = 102",
        "102 clone3({flags=CLONE_VM|CLONE_THREAD|CLONE_SIGHAND, ...}, 88) = 103",
    ]
    assert strace._forks(log) == 2
