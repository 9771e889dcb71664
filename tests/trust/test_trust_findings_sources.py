"""The trust rule applied to the reviews a findings extraction or a self-check read.

A self-check's findings are the findings of the chain it checked, less what it dropped; an
extraction's are anchored in the review it read. Both read another chain: the rule that sets
a forged review aside must set aside what is read through it too, or a pull request that
forges the extraction under a genuine, committed self-check switches the gate off.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.builders import sha
from tests.support.cli import review
from tests.support.git import commit_change, git

CODE = ("src/pkg/mean.py",)
NOTHING = json.dumps({"findings": []}) + "\n"


def forge_answer(repo: Path, receipt_rel: str, text: str) -> None:
    """The segment's answer replaced by ``text``, both hashes recomputed (``verify`` passes)."""
    stem = receipt_rel[: -len(".receipt.json")]
    receipt = json.loads((repo / receipt_rel).read_text(encoding="utf-8"))
    record = json.loads((repo / f"{stem}.request.json").read_text(encoding="utf-8"))
    receipt["answer_sha256"] = record["response"]["content_sha256"] = sha(text.encode())
    (repo / receipt["answer_path"]).write_text(text, encoding="utf-8")
    (repo / f"{stem}.request.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    (repo / receipt_rel).write_text(json.dumps(receipt, indent=2), encoding="utf-8")


def checked_review_on_main(repo: Path, cli: Any, sim: Any) -> dict[str, Any]:
    """A review with a findings extraction and a self-check keeping every finding,
    committed on ``main``; a pull request branch checked out on top."""
    run = review(
        cli, sim, "--template", "code-review", "--findings", "--self-check",
        "--self-check-threshold", "0", "--output-dir", "ci-review", context=CODE,
    )  # fmt: skip
    assert run.code == 0, run.err
    commit_change(repo, "base with its review")
    git(repo, "branch", "-m", "main")
    git(repo, "checkout", "-qb", "pr")
    out: dict[str, Any] = run.json()
    return out


def test_findings_read_through_a_forged_extraction_are_not_exported_as_checked(
    repo, cli, simulator
):
    """The pull request forges the extraction (no findings, hashes recomputed) under the
    genuine self-check committed on ``main``: the self-check's result, read through it, is
    not exported; the self-check is listed as a problem naming what was set aside."""
    ran = checked_review_on_main(repo, cli, simulator)
    extraction = ran["extraction"][-1]["receipt_path"]
    check = ran["self_check"][-1]
    forge_answer(repo, extraction, NOTHING)
    commit_change(repo, "the pull request's forged extraction")
    got = cli("findings", "ci-review", "--format", "json", "--trusted-rev", "main")
    out = json.loads(got.out)
    assert check["receipt_path"] not in [r["receipt_path"] for r in out["receipts"]]
    problems = {p["path"]: p["reason"] for p in out["problems"]}
    assert f"read {extraction}, which the trust rule set aside" in problems[check["answer_path"]]


def test_a_self_check_read_through_genuine_reviews_still_counts(repo, cli, simulator):
    ran = checked_review_on_main(repo, cli, simulator)
    got = cli("findings", "ci-review", "--format", "json", "--trusted-rev", "main")
    out = json.loads(got.out)
    assert got.code == 0, got.err
    assert ran["self_check"][-1]["receipt_path"] in [r["receipt_path"] for r in out["receipts"]]
    assert out["findings"] and out["problems"] == []
