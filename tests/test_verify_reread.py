"""``verify``'s text line says how a pinned request was re-read (``commit abc1234``,
``working tree``, the change made again by git), not only ``--json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import run_review
from tests.test_diff_review import base_commit, commit
from tests.test_pinning import NEW_SPEC


def only_receipt(result: Any) -> str:
    (segment,) = result.json()["segments"]
    return str(segment["receipt_path"])


def test_the_text_line_says_a_pinned_file_was_re_read_from_its_commit(
    repo: Path, cli: Any, simulator: Any
) -> None:
    head = base_commit(repo)
    receipt = only_receipt(run_review(cli, simulator))
    commit(repo, "spec moves on", {"docs/spec.md": NEW_SPEC})
    result = cli("verify", "--strict")
    assert result.code == 0, result.err
    assert f"OK   {receipt} (re-read: docs/spec.md from commit {head[:7]})\n" in result.err


def test_the_text_line_groups_files_by_where_they_were_re_read(
    repo: Path, cli: Any, simulator: Any
) -> None:
    head = base_commit(repo)
    (repo / "src" / "pkg" / "mean.py").write_text("def mean(xs):\n    return 0\n")
    receipt = only_receipt(run_review(cli, simulator, "-c", "src/pkg/mean.py"))
    result = cli("verify")
    assert result.code == 0, result.err
    assert (
        f"OK   {receipt} (re-read: docs/spec.md from commit {head[:7]}; "
        "src/pkg/mean.py from working tree)\n"
    ) in result.err


def test_the_text_line_of_a_diff_review_says_git_made_the_change_again(
    repo: Path, cli: Any, simulator: Any
) -> None:
    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    run = cli("run", "-p", "x", "--diff", f"{a}..{b}", "--endpoint", simulator.base_url, "--json")
    receipt = only_receipt(run)
    result = cli("verify", "--strict")
    assert result.code == 0, result.err
    assert f"OK   {receipt} (re-read: the change {a[:7]} to {b[:7]} made again by git)\n" in (
        result.err
    )


def test_quiet_leaves_out_the_ok_lines_and_their_re_read_notes(
    repo: Path, cli: Any, simulator: Any
) -> None:
    base_commit(repo)
    run_review(cli, simulator)
    result = cli("verify", "-q")
    assert result.code == 0, result.err
    assert "re-read" not in result.err
