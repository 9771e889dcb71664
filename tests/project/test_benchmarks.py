"""Smoke tests of `make bench` at tiny sizes, so the benchmark code cannot rot: each guard's
two sides must still do the same work (the same request bodies, the same files read, as many
processes), each row states the limit issue #31 gives it, and rows run whole through the
document renderer."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from benchmarks import (
    bench_batch,
    bench_cache,
    bench_gather,
    bench_memory,
    bench_review,
    bench_sign,
    bench_split,
    bench_verify,
    bench_version,
    strace,
)
from benchmarks.__main__ import available, render
from benchmarks.bench_verify import make_corpus, processes_of, sha256sum_side
from benchmarks.common import (
    BenchResult,
    Command,
    Sample,
    Side,
    SimulatorProcess,
    paired,
    run_command,
    tool,
)
from benchmarks.strace import count_processes, files_opened

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")


def test_bench_measures_the_guards_of_issue_31_and_the_signing_count() -> None:
    assert available() == [
        "review", "version", "batch", "pool", "verify", "memory", "gather", "split", "sign",
        "cache",
    ]  # fmt: skip


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


def test_review_row_stdlib_script_sends_ours_exact_body(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    files = bench_review.make_repo(repo, 2)
    with SimulatorProcess() as sim:
        ours, _ = bench_review.sides(tmp_path, repo, files, sim.base_url)
        bench_review.keep_request(ours, repo, tmp_path / "skeleton.json")
    ours_sent, script_sent = bench_review.same_bodies(tmp_path, repo, files)
    assert len(ours_sent) == 1
    assert ours_sent == script_sent


def test_review_row_is_ours_over_the_stdlib_script_within_3x(tmp_path: Path) -> None:
    result = bench_review.run(tmp_path, rounds=1, n_files=1)
    assert result.limit == "<= 3x a stdlib script making the same request"
    assert result.baseline is not None
    assert result.ratio == result.ours.wall / result.baseline.wall
    assert result.held == (result.ratio <= 3.0)


def test_version_row_is_ours_against_an_absolute_tenth_of_a_second(tmp_path: Path) -> None:
    result = bench_version.run(tmp_path, rounds=1)
    assert result.limit == "<= 0.1 s (absolute)"
    assert result.ratio == pytest.approx(result.ours.wall / 0.1)
    assert result.held == (result.ours.wall <= 0.1)


def test_batch_ideal_is_the_waves_of_capacity_times_the_latency() -> None:
    assert bench_batch.ideal(200) == pytest.approx(200 / 8 * 0.2)
    assert bench_batch.ideal(8) == pytest.approx(0.2)
    assert bench_batch.ideal(9) == pytest.approx(0.4)  # a ninth request waits for a second wave


def test_batch_row_bare_client_sends_the_batch_bodies(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    bench_batch.make_repo(root, 6)
    with SimulatorProcess() as sim:
        bench_batch.Batch(root, sim.base_url, "out").run()
    assert bench_batch.write_bodies(root, "out-0", tmp_path / "bodies") == 6
    ours, bare = bench_batch.same_bodies(root, tmp_path / "bodies", tmp_path)
    assert len(ours) == 6
    assert ours == bare


def test_batch_row_is_ours_over_the_ideal_not_over_the_bare_client(tmp_path: Path) -> None:
    result = bench_batch.run(tmp_path, rounds=1, reviews=10)
    assert result.limit == "<= 1.12x the ideal (10 / 8 x 0.2 s = 0.4 s)"
    assert result.ratio == pytest.approx(result.ours.wall / 0.4)
    assert result.held == (result.ratio <= 1.12)
    assert result.baseline is not None and result.baseline_name.endswith("(context)")


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


@pytest.mark.parametrize("pinned", [True, False])
def test_verify_corpus_pins_its_context_to_git_blobs_only_for_the_pinned_row(
    tmp_path: Path, pinned: bool
) -> None:
    root = (tmp_path / "repo").resolve()
    make_corpus(root, 2, pinned=pinned)
    records = [json.loads(p.read_bytes()) for p in (root / "reviews").glob("*.request.json")]
    blobs = [f.get("blob") for r in records for f in (r.get("git") or {}).get("files", [])]
    assert records
    assert (bool(blobs) and all(blobs)) == pinned


@needs_strace
@pytest.mark.parametrize("pinned", [True, False])
def test_verify_rows_pinned_and_unpinned_are_held_to_3x_sha256sum(
    tmp_path: Path, pinned: bool
) -> None:
    result = bench_verify.verify_row(tmp_path, receipts=6, rounds=1, pinned=pinned)
    kind = "pinned to git" if pinned else "unpinned"
    assert result.name == f"`verify` of 6 receipts, records {kind}"
    assert result.limit == "<= 3x sha256sum of the files it reads, same number of processes"
    assert result.baseline is not None
    assert result.held == (result.ours.wall / result.baseline.wall <= 3.0)


@needs_strace
def test_gather_row_ours_reads_exactly_what_git_lists(tmp_path: Path) -> None:
    result = bench_gather.run(tmp_path, rounds=1, files=100)
    assert result.limit == "<= 2.5x `git ls-files -z | xargs -0 cat`"
    assert "opened exactly the 101 files `git ls-files` lists" in " ".join(result.notes)


@pytest.mark.skipif(not Path("/usr/bin/time").exists(), reason="needs /usr/bin/time")
def test_split_row_plans_every_file_against_ten_seconds_and_a_gigabyte(tmp_path: Path) -> None:
    result = bench_split.run(tmp_path, rounds=1, files=300)
    assert result.limit == "<= 10 s and <= 1 GB peak (absolute)"
    assert result.ratio == result.ours.wall / 10.0
    assert result.held == (result.ours.wall <= 10.0 and result.ours.max_rss <= 10**9)
    assert "every one of the 300 files" in " ".join(result.notes)
    assert "## planning a split review of 300 files" in render([("split", result, "")], 1.0)


def test_memory_row_renders_from_a_run_of_both_sides_on_the_same_body(tmp_path: Path) -> None:
    result = bench_memory.run(tmp_path, rounds=1, context_bytes=200_000)
    assert result.baseline is not None
    assert result.ours.max_rss > 0 and result.baseline.max_rss > 0
    doc = render([("memory", result, "")], 1.0)
    assert "| peak memory, 0.190735 MB of context | <= 1.6x the request body |" in doc
    assert "received the same" in doc


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")
def test_sign_row_counts_one_ssh_keygen_call_per_segment_and_one_probe(tmp_path: Path) -> None:
    result = bench_sign.run(tmp_path, segments=4)
    assert result.details == [("ssh-keygen calls to sign the segments", "5 for 4 segments")]
    assert result.ratio == 1.0
    assert result.held
    assert result.baseline is None


def test_a_row_without_a_baseline_and_a_guard_not_held_render() -> None:
    ours = Side.of([Sample(0.5, 0.4, 0)], processes=1)
    rows: list[tuple[str, BenchResult | None, str]] = [
        ("sign", BenchResult("a count", "<= 1 call", 1.0, True, ours, None, "none", 1), ""),
        ("version", BenchResult("start-up", "<= 0.1 s", 5.0, False, ours, ours, "bare", 1), ""),
    ]
    doc = render(rows, 1.0)
    row = "| a count | <= 1 call | 1.000x | yes | 0.500 s wall, 0.400 s CPU, 1 proc | none | 1 |"
    assert row in doc.splitlines()
    assert "no baseline (none); 1 run." in doc
    assert "Guards held: 1 of 2; not held: start-up." in doc


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


def test_cache_bench_reads_each_reviews_share_from_its_request_record(tmp_path: Path) -> None:
    r = bench_cache.run(tmp_path, tokens=600)
    shares = dict(r.details)["share from the cache, entries 1-5"].split(", ")
    assert len(shares) == 5 and float(shares[0]) == 0.0
    assert round(r.ratio, 3) == min(float(s) for s in shares[1:]) and r.held
    assert "v1" in r.baseline_name
