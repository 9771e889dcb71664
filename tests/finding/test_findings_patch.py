"""``findings --format patch``: the suggestions of findings anchored by their quotes, as one
unified diff against the reviewed version of each file, which ``git apply`` takes on the
reviewed commit (and ``git apply --3way`` on a later one); what it leaves out is said."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from deepseek_review.testing.simulator.answer import SUGGESTED
from tests.support.cli import review
from tests.support.findings import PROSE_END, answer_of, block, item, review_answering
from tests.support.git import commit, git

MEAN = "src/pkg/mean.py"


def reviewed_commit(repo: Path, cli: Any, server: Any, *context: str) -> tuple[str, str]:
    """The repo fixture committed and its ``context`` reviewed (code-review, asking for
    findings): the commit and the review's answer file."""
    oid = commit(repo, "base", {})
    run = review(cli, server, "--template", "code-review", context=context or (MEAN,))
    assert run.code == 0, run.err
    return oid, answer_of(run)


def patch_of(cli: Any, *paths: str) -> Any:
    got = cli("findings", *paths, "--format", "patch", "-o", "x.patch")
    assert got.code == 0, got.err
    return got


def applies(repo: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``git apply FLAGS x.patch`` in ``repo``."""
    return subprocess.run(
        ["git", "apply", *flags, "x.patch"], cwd=repo, capture_output=True, text=True
    )


def test_the_patch_applies_on_the_reviewed_commit_and_makes_the_suggested_text(
    repo, cli, simulator
):
    _, answer = reviewed_commit(repo, cli, simulator)
    patch_of(cli, answer)
    assert (
        (repo / "x.patch").read_text(encoding="utf-8").startswith(f"diff --git a/{MEAN} b/{MEAN}\n")
    )
    checked = applies(repo, "--check")
    assert checked.returncode == 0, checked.stderr
    assert applies(repo).returncode == 0
    assert (repo / MEAN).read_text(encoding="utf-8") == (
        f"def mean(xs):{SUGGESTED}\n    return sum(xs) / len(xs)\n"
    )


def test_a_file_changed_since_the_review_still_gets_a_patch_against_the_reviewed_commit(
    repo, cli, simulator
):
    reviewed, answer = reviewed_commit(repo, cli, simulator)
    later = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef total(xs):\n    return sum(xs)\n"
    commit(repo, "later", {MEAN: later})
    got = patch_of(cli, answer)
    assert f"{MEAN} changed since the review: its patch is against the reviewed version" in got.err
    assert applies(repo, "--3way").returncode == 0  # merged into the later version
    assert (repo / MEAN).read_text(encoding="utf-8").startswith(f"def mean(xs):{SUGGESTED}\n")
    git(repo, "reset", "-q", "--hard")
    git(repo, "checkout", "-q", reviewed)
    checked = applies(repo, "--check")
    assert checked.returncode == 0, checked.stderr


def test_a_suggestion_whose_quote_is_not_found_yields_no_hunk_and_is_reported(repo, cli, make_stub):
    commit(repo, "base", {})
    found = block(
        item(start_line=2, end_line=2, quote="    return sum(xs) / len(xs)",
             suggestion="    return sum(xs) / max(len(xs), 1)\n"),
        item(start_line=1, end_line=1, quote="def average(xs):", severity="critical",
             suggestion="def mean(xs: list[float]) -> float:\n"),
    )  # fmt: skip
    run = review_answering(cli, make_stub, [PROSE_END + found])
    got = patch_of(cli, answer_of(run))
    text = (repo / "x.patch").read_text(encoding="utf-8")
    assert "+    return sum(xs) / max(len(xs), 1)\n" in text
    assert "def mean(xs: list[float])" not in text
    assert f"suggestion left out: {MEAN}:1-1 [critical] " in got.err
    assert "quote not found in the reviewed version of src/pkg/mean.py" in got.err
    assert applies(repo, "--check").returncode == 0


def test_no_suggestion_to_offer_writes_an_empty_patch(repo, cli, make_stub):
    commit(repo, "base", {})
    run = review_answering(cli, make_stub, [PROSE_END + block(item(quote="def mean(xs):"))])
    patch_of(cli, answer_of(run))
    assert (repo / "x.patch").read_bytes() == b""
