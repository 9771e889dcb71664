"""A chain is pinned to git whole: every continuation's record pins what its primary's does.

A continuation repeats its primary's prompt, so it is rebuilt from the same files; once its
record held no ``git`` key it was rebuilt from the working tree, and every continuation of a
committed file failed ``verify --strict`` as soon as the file changed ("context file changed
since the review"), while the primary verified from its blob. Continuations made by ``run``,
by ``continue`` (rebuilt from the blob) and by ``batch`` are covered, after an edit, after a
commit over the file, and in a clone elsewhere.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator
from tests.support.batch import batch, manifest
from tests.support.cli import CliResult, review
from tests.support.git import base_commit, commit

Cli = Callable[..., CliResult]
MakeSim = Callable[..., Simulator]
NEW_SPEC = "# Spec\n\nThe mean of 2, 4 and 9 is 6 now.\n"


def records(folder: Path) -> list[dict[str, Any]]:
    out = [json.loads(p.read_text()) for p in sorted(folder.glob("*.request.json"))]
    assert out
    return out


def assert_chain_pinned_alike(folder: Path) -> None:
    """Every record pins exactly what its chain's primary pins, and there are continuations."""
    by_answer = {r["answer_path"]: r for r in records(folder)}
    continuations = [r for r in by_answer.values() if r["kind"] == "continuation"]
    assert continuations
    for record in continuations:
        primary = by_answer[record["continuation"]["primary_answer_path"]]
        assert "git" in primary
        assert record["git"] == primary["git"]


def verify_strict(cli: Cli, *args: str) -> dict[str, Any]:
    """``verify --strict --json``: it passes, and every receipt's prompt was rebuilt from git."""
    r = cli("verify", "--strict", "--json", *args)
    assert r.code == 0, r.out + r.err
    report: dict[str, Any] = r.json()
    details = [c["detail"] for rc in report["receipts"] for c in rc["checks"]
               if c["name"] == "prompt"]  # fmt: skip
    assert len(details) > 1
    assert all("from commit" in d or "made again by git" in d for d in details), details
    return report


def chain(cli: Cli, sim: Simulator, *extra: str) -> CliResult:
    r = review(cli, sim, "--max-tokens", "20", "--max-continuations", "10", *extra)
    assert r.code == 0, r.err
    assert len(r.json()["segments"]) > 2
    return r


@pytest.fixture
def sim(make_simulator: MakeSim) -> Simulator:
    return make_simulator(answer_words=60)


def test_a_chains_continuations_pin_what_its_primary_pins(
    repo: Path, cli: Cli, sim: Simulator
) -> None:
    base_commit(repo)
    chain(cli, sim)
    assert_chain_pinned_alike(repo / "reviews")


def test_a_chain_verifies_whole_after_its_file_was_edited(
    repo: Path, cli: Cli, sim: Simulator
) -> None:
    base_commit(repo)
    chain(cli, sim)
    (repo / "docs" / "spec.md").write_text(NEW_SPEC, encoding="utf-8")
    verify_strict(cli)


def test_a_chain_verifies_whole_after_its_file_was_committed_over_and_deleted(
    repo: Path, cli: Cli, sim: Simulator
) -> None:
    base_commit(repo)
    chain(cli, sim)
    commit(repo, "spec moves on", {"docs/spec.md": NEW_SPEC})
    verify_strict(cli)
    commit(repo, "spec goes", {"docs/spec.md": None})
    verify_strict(cli)


def test_a_chain_verifies_whole_in_a_clone_elsewhere(
    repo: Path, cli: Cli, sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base_commit(repo)
    chain(cli, sim)
    commit(repo, "the reviews, then the spec moves on", {"docs/spec.md": NEW_SPEC})
    clone = tmp_path / "elsewhere" / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, capture_output=True)
    monkeypatch.chdir(clone)
    verify_strict(cli)
    (clone / "docs" / "spec.md").write_text("# Spec\n\nEdited in the clone.\n", encoding="utf-8")
    verify_strict(cli)


def test_continue_after_an_edit_rebuilds_from_the_blob_and_pins_its_segments(
    repo: Path, cli: Cli, sim: Simulator
) -> None:
    base_commit(repo)
    first = review(cli, sim, "--max-tokens", "20", "--max-continuations", "0")
    assert first.code == 4, first.err
    (repo / "docs" / "spec.md").write_text(NEW_SPEC, encoding="utf-8")
    answer = first.json()["segments"][0]["answer_path"]
    more = cli("continue", answer, "--endpoint", sim.base_url, "--max-continuations", "10")
    assert more.code == 0, more.err
    assert_chain_pinned_alike(repo / "reviews")
    verify_strict(cli)


def test_a_diff_reviews_continuations_verify_after_the_branch_moved_on(
    repo: Path, cli: Cli, sim: Simulator
) -> None:
    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    r = cli("run", "-p", "x", "--diff", f"{a}..{b}", "--endpoint", sim.base_url,
            "--max-tokens", "20", "--max-continuations", "10", "--json")  # fmt: skip
    assert r.code == 0, r.err
    assert len(r.json()["segments"]) > 2
    assert_chain_pinned_alike(repo / "reviews")
    commit(repo, "later", {"src/pkg/mean.py": None, "docs/spec.md": NEW_SPEC})
    verify_strict(cli)


def test_a_batchs_chains_verify_whole_after_the_files_were_edited(
    repo: Path, cli: Cli, sim: Simulator
) -> None:
    manifest(repo, ["a", "b"])
    base_commit(repo)
    done = batch(cli, sim, "--max-tokens", "20")
    assert done.code == 0, done.err
    assert_chain_pinned_alike(repo / "reviews")
    (repo / "docs" / "spec.md").write_text(NEW_SPEC, encoding="utf-8")
    verify_strict(cli)


def test_a_batch_continuing_an_earlier_chain_pins_what_its_primary_pins(
    repo: Path, cli: Cli, sim: Simulator
) -> None:
    manifest(repo, ["a"])
    base_commit(repo)
    cut = batch(cli, sim, "--max-tokens", "20", "--max-continuations", "0")
    assert cut.code != 0
    commit(repo, "the reviews: HEAD moves on, the spec does not", {})
    resumed = batch(cli, sim, "--max-tokens", "20", "--max-continuations", "10")
    assert resumed.code == 0, resumed.err
    assert_chain_pinned_alike(repo / "reviews")
    (repo / "docs" / "spec.md").write_text(NEW_SPEC, encoding="utf-8")
    verify_strict(cli)
