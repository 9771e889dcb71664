"""``verify``'s text line says how a pinned request was re-read (``commit abc1234``,
``working tree``, the change made again by git), not only ``--json``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.support.cli import review
from tests.support.git import NEW_SPEC, base_commit, commit, git


def only_receipt(result: Any) -> str:
    (segment,) = result.json()["segments"]
    return str(segment["receipt_path"])


def test_the_text_line_says_a_pinned_file_was_re_read_from_its_commit(
    repo: Path, cli: Any, simulator: Any
) -> None:
    head = base_commit(repo)
    receipt = only_receipt(review(cli, simulator))
    commit(repo, "spec moves on", {"docs/spec.md": NEW_SPEC})
    result = cli("verify", "--strict")
    assert result.code == 0, result.err
    assert f"OK   {receipt} (re-read: docs/spec.md from commit {head[:7]})\n" in result.err


def test_the_text_line_groups_files_by_where_they_were_re_read(
    repo: Path, cli: Any, simulator: Any
) -> None:
    head = base_commit(repo)
    (repo / "src" / "pkg" / "mean.py").write_text("def mean(xs):\n    return 0\n")
    receipt = only_receipt(review(cli, simulator, "-c", "src/pkg/mean.py"))
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
    review(cli, simulator)
    result = cli("verify", "-q")
    assert result.code == 0, result.err
    assert "re-read" not in result.err


# ------------------------------------------------------------- a copy without .git (#30 item 12)


def _copy_without_git(repo: Path, dest: Path) -> Path:
    """The tracked files and the reviews, copied to ``dest`` with no ``.git``."""
    tracked = git(repo, "ls-files", "-z").split("\0")
    for rel in [t for t in tracked if t] + [
        str(p.relative_to(repo)) for p in (repo / "reviews").iterdir()
    ]:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / rel, dest / rel)
    return dest


def test_a_copy_without_git_verifies_pinned_files_by_their_hashes(
    repo: Path, cli: Any, simulator: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    head = base_commit(repo)
    receipt = only_receipt(review(cli, simulator))
    monkeypatch.chdir(_copy_without_git(repo, tmp_path / "copy"))
    result = cli("verify", "--strict")
    assert result.code == 0, result.err
    assert f"OK   {receipt} (re-read: docs/spec.md from commit {head[:7]})\n" in result.err
    assert "fetch" not in result.err and "unshallow" not in result.err


def test_a_copy_without_git_names_a_changed_pinned_file_without_git_advice(
    repo: Path, cli: Any, simulator: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    base_commit(repo)
    review(cli, simulator)
    copy = _copy_without_git(repo, tmp_path / "copy")
    (copy / "docs" / "spec.md").write_text(NEW_SPEC, encoding="utf-8")
    monkeypatch.chdir(copy)
    result = cli("verify", "--strict")
    assert result.code == 9, result.err
    assert "changed since the review, and no git repository here holds docs/spec.md" in (result.err)
    assert "fetch" not in result.err and "unshallow" not in result.err


def test_a_copy_without_git_of_a_diff_review_says_git_cannot_make_the_change_again(
    repo: Path, cli: Any, simulator: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    cli("run", "-p", "x", "--diff", f"{a}..{b}", "--endpoint", simulator.base_url, "--json")
    monkeypatch.chdir(_copy_without_git(repo, tmp_path / "copy"))
    result = cli("verify")
    assert result.code == 0, result.err
    assert f"the change {a[:7]} to {b[:7]} cannot be made again: no git repository here" in (
        result.err
    )
    assert "fetch" not in result.err


def test_inside_git_a_missing_blob_still_names_git_fetch(
    repo: Path, cli: Any, simulator: Any
) -> None:
    base_commit(repo)
    receipt = only_receipt(review(cli, simulator))
    record = repo / receipt.replace(".receipt.json", ".request.json")
    data = json.loads(record.read_text(encoding="utf-8"))
    data["git"]["files"][0]["blob"] = "0" * 40  # a blob this clone does not have
    record.write_text(json.dumps(data), encoding="utf-8")
    result = cli("verify")
    assert "not in the repository: docs/spec.md (blob 0000000)" in result.err
    assert "git fetch --unshallow" in result.err
