"""Reviews pinned to git: automatic pinning, ``--rev``, ``--staged``, and ``verify`` and
``continue`` rebuilding from git's objects after the working tree moved on."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support.cli import review
from tests.support.git import (
    NEW_SPEC,
    base_commit,
    commit,
    dry,
    git,
    user_text,
)


def record_of(repo: Path, result: Any) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(
        (repo / result.json()["segments"][0]["record_path"]).read_text()
    )
    return record


def verify(cli: Any, *args: str) -> Any:
    return cli("verify", "--json", *args)


def prompt_check(result: Any) -> dict[str, Any]:
    (receipt,) = result.json()["receipts"]
    return next(c for c in receipt["checks"] if c["name"] == "prompt")


# --------------------------------------------------------------------------- automatic pinning


def test_a_committed_file_is_pinned_to_its_blob_and_a_dirty_one_to_its_hash(
    repo: Path, cli: Any, simulator: Any
) -> None:
    head = base_commit(repo)
    (repo / "src" / "pkg" / "mean.py").write_text("def mean(xs):\n    return 0\n")
    result = review(cli, simulator, "-c", "src/pkg/mean.py")
    assert result.code == 0, result.err
    spec, mean = record_of(repo, result)["git"]["files"]
    blob = git(repo, "rev-parse", "HEAD:docs/spec.md").strip()
    assert spec == {"path": "docs/spec.md", "blob": blob, "commit": head}
    assert mean["path"] == "src/pkg/mean.py" and mean["worktree"].startswith("sha256:")


def test_a_process_that_reads_git_again_pins_to_the_new_head(
    repo: Path, cli: Any, simulator: Any
) -> None:
    from deepseek_review.git.runner import forget_git_facts

    base_commit(repo)
    assert review(cli, simulator, "--topic", "first").code == 0
    new_head = commit(repo, "spec moves on", {"docs/spec.md": NEW_SPEC})
    forget_git_facts()  # what a long-running library user calls after committing
    result = review(cli, simulator, "--topic", "second")
    assert result.code == 0, result.err
    spec = record_of(repo, result)["git"]["files"][0]
    blob = git(repo, "rev-parse", "HEAD:docs/spec.md").strip()
    assert spec == {"path": "docs/spec.md", "blob": blob, "commit": new_head}


def test_a_review_of_uncommitted_files_records_no_pins(
    repo: Path, cli: Any, simulator: Any
) -> None:
    result = review(cli, simulator)
    assert result.code == 0, result.err
    assert "git" not in record_of(repo, result)


# --------------------------------------------------------------------------- verify from objects


def test_verify_strict_passes_after_a_pinned_file_was_changed_and_committed_over(
    repo: Path, cli: Any, simulator: Any
) -> None:
    head = base_commit(repo)
    assert review(cli, simulator).code == 0
    commit(repo, "spec moves on", {"docs/spec.md": NEW_SPEC})
    result = verify(cli, "--strict")
    assert result.code == 0, result.err
    assert prompt_check(result)["detail"] == (
        f"request rebuilt from git objects: docs/spec.md from commit {head[:7]}"
    )


def test_verify_strict_passes_after_a_pinned_file_was_deleted(
    repo: Path, cli: Any, simulator: Any
) -> None:
    base_commit(repo)
    assert review(cli, simulator).code == 0
    (repo / "docs" / "spec.md").unlink()
    result = verify(cli, "--strict")
    assert result.code == 0, result.err


def test_verify_says_a_dirty_file_is_read_from_the_working_tree(
    repo: Path, cli: Any, simulator: Any
) -> None:
    head = base_commit(repo)
    (repo / "src" / "pkg" / "mean.py").write_text("def mean(xs):\n    return 0\n")
    assert review(cli, simulator, "-c", "src/pkg/mean.py").code == 0
    result = verify(cli, "--strict")
    assert result.code == 0, result.err
    assert prompt_check(result)["detail"] == (
        f"request rebuilt from git objects: docs/spec.md from commit {head[:7]}; "
        "src/pkg/mean.py from working tree"
    )


def test_verify_fails_naming_the_file_when_a_pin_claims_another_blob(
    repo: Path, cli: Any, simulator: Any
) -> None:
    base_commit(repo)
    result = review(cli, simulator)
    path = repo / result.json()["segments"][0]["record_path"]
    record = json.loads(path.read_text())
    record["git"]["files"][0]["blob"] = git(repo, "rev-parse", "HEAD:src/pkg/mean.py").strip()
    path.write_text(json.dumps(record))
    checked = verify(cli)
    assert checked.code == 9
    assert prompt_check(checked)["detail"].startswith(
        "the request record's hash of docs/spec.md (commit "
    )
    assert "is not the hash of the pinned blob" in prompt_check(checked)["detail"]


def test_verify_strict_passes_for_a_diff_review_after_the_branch_moved_on(
    repo: Path, cli: Any, simulator: Any
) -> None:
    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    result = cli("run", "-p", "x", "--diff", f"{a}..{b}", "--endpoint", simulator.base_url)
    assert result.code == 0, result.err
    commit(repo, "later", {"src/pkg/mean.py": None, "docs/spec.md": NEW_SPEC})
    checked = verify(cli, "--strict")
    assert checked.code == 0, checked.err
    assert prompt_check(checked)["detail"] == (
        f"request rebuilt from git objects: the change {a[:7]} to {b[:7]} made again by git"
    )


def test_verify_fails_when_the_recorded_change_is_not_the_commits_change(
    repo: Path, cli: Any, simulator: Any
) -> None:
    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    c = commit(repo, "more", {"src/pkg/mean.py": "def mean(xs):\n    return 1\n"})
    result = cli("run", "-p", "x", "--diff", f"{a}..{b}", "--endpoint", simulator.base_url)
    assert result.code == 0, result.err
    record_path = next((repo / "reviews").glob("*.request.json"))
    record = json.loads(record_path.read_text())
    record["git"]["commits"]["head"] = c
    record_path.write_text(json.dumps(record))
    checked = verify(cli)
    assert checked.code == 9
    assert prompt_check(checked)["detail"].startswith(
        f"the change in the request is not the change {a[:7]} to {c[:7]} as git makes it"
    )


# --------------------------------------------------------------------------- shallow clones


def _shallow_clone(repo: Path, tmp: Path) -> Path:
    clone = tmp / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(clone)],
        check=True,
        capture_output=True,
    )
    return clone


def test_a_range_whose_base_a_shallow_clone_lacks_exits_16_with_the_fix(
    repo: Path, cli: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    a = base_commit(repo)
    commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    clone = _shallow_clone(repo, tmp_path)
    monkeypatch.chdir(clone)
    result = cli("run", "-p", "x", "--dry-run", "--diff", f"{a}..HEAD")
    assert result.code == 16
    assert f"error: --diff {a}: no such commit in this shallow clone" in result.err
    assert "git fetch --unshallow" in result.err and "fetch-depth: 0" in result.err


def test_verify_in_a_shallow_clone_names_the_missing_blob_and_the_fix(
    repo: Path, cli: Any, simulator: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    base_commit(repo)
    assert review(cli, simulator).code == 0
    git(repo, "add", "-A")
    commit(repo, "receipts and a new spec", {"docs/spec.md": NEW_SPEC})
    clone = _shallow_clone(repo, tmp_path)
    monkeypatch.chdir(clone)
    checked = verify(cli, "--strict")
    assert checked.code == 9
    detail = prompt_check(checked)["detail"]
    assert detail.startswith("cannot rebuild the request: not in the repository: docs/spec.md")
    assert "git fetch --unshallow" in detail


# --------------------------------------------------------------------------- --rev, --staged


def test_rev_reads_the_context_from_that_commits_blobs(repo: Path, cli: Any) -> None:
    a = base_commit(repo)
    (repo / "docs" / "spec.md").write_text(NEW_SPEC)
    text = user_text(repo, "--rev", "v1", "--context", "docs/spec.md")
    assert "The mean of 2, 4 and 9 is 5.\n" in text and "Always" not in text
    plan = dry(cli, "--rev", "v1", "-c", "docs")
    assert plan["git"]["files"][0]["commit"] == a
    assert [f["path"] for f in plan["context_files"]] == ["docs/spec.md"]


def test_rev_naming_no_commit_is_refused(repo: Path, cli: Any) -> None:
    base_commit(repo)
    result = cli("run", "-p", "x", "--dry-run", "--rev", "v9", "-c", "docs/spec.md")
    assert result.code == 3
    assert "error: --rev v9: not a commit of the repository" in result.err


def test_staged_reviews_the_index_against_head_only(repo: Path, cli: Any) -> None:
    base_commit(repo)
    (repo / "src" / "pkg" / "mean.py").write_text("def mean(xs):\n    return 0\n")
    git(repo, "add", "src/pkg/mean.py")
    (repo / "docs" / "spec.md").write_text(NEW_SPEC)  # not staged
    plan = dry(cli, "--staged")
    assert plan["git"]["diff"]["shown"] == ["src/pkg/mean.py"]


def test_staged_and_diff_together_are_refused(repo: Path, cli: Any) -> None:
    base_commit(repo)
    result = cli("run", "-p", "x", "--dry-run", "--staged", "--diff", "HEAD")
    assert result.code == 3
    assert "error: --staged and --diff cannot be used together" in result.err


def test_a_staged_review_verifies_after_it_was_committed(
    repo: Path, cli: Any, simulator: Any
) -> None:
    base_commit(repo)
    (repo / "src" / "pkg" / "mean.py").write_text("def mean(xs):\n    return 0\n")
    git(repo, "add", "src/pkg/mean.py")
    result = cli("run", "-p", "x", "--staged", "--endpoint", simulator.base_url)
    assert result.code == 0, result.err
    commit(repo, "commit what was reviewed", {})
    commit(repo, "and move on", {"src/pkg/mean.py": "def mean(xs):\n    return 1\n"})
    assert verify(cli, "--strict").code == 0


# --------------------------------------------------------------------------- continue


def test_continue_on_a_pinned_review_rebuilds_from_the_same_objects(
    repo: Path, cli: Any, make_simulator: Any
) -> None:
    base_commit(repo)
    sim = make_simulator(answer_words=60)
    first = review(cli, sim, "--max-tokens", "20", "--max-continuations", "0")
    assert first.code == 4
    commit(repo, "spec moves on", {"docs/spec.md": NEW_SPEC})
    answer = first.json()["segments"][0]["answer_path"]
    resumed = cli("continue", answer, "--endpoint", sim.base_url, "--json")
    assert resumed.code == 0, resumed.err
    original, again = (json.loads(r.body) for r in sim.chat_requests()[:2])
    assert again["messages"][:-1] == original["messages"]


def test_a_pinned_record_validates_against_the_schema_and_reads_back_to_its_bytes(
    repo: Path, cli: Any, simulator: Any
) -> None:
    from deepseek_review.records.request_record import RequestRecord
    from tests.support.schema import schema_errors

    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n", "x.lock": "l"})
    args = ("--diff", f"{a}..{b}", "--whole-files", "-c", "docs/spec.md", "--json")
    result = cli("run", "-p", "x", "--endpoint", simulator.base_url, *args)
    assert result.code == 0, result.err
    path = repo / result.json()["segments"][0]["record_path"]
    raw = path.read_bytes()
    assert set(json.loads(raw)["git"]) == {"commits", "diff", "files"}
    assert schema_errors(json.loads(raw)) == []
    assert RequestRecord.load(raw, path.name).to_bytes() == raw


def test_rev_refuses_a_named_file_that_is_binary_in_that_commit(repo: Path, cli: Any) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\0")
    base_commit(repo)
    result = cli("run", "-p", "x", "--dry-run", "--rev", "v1", "-c", "logo.png")
    assert result.code == 3
    assert "error: context file logo.png: binary (NUL byte at offset 4) in commit" in result.err


def test_rev_leaves_out_a_binary_file_a_folder_lists(repo: Path, cli: Any) -> None:
    (repo / "docs" / "logo.png").write_bytes(b"\x89PNG\0")
    base_commit(repo)
    plan = dry(cli, "--rev", "v1", "-c", "docs")
    assert [f["path"] for f in plan["context_files"]] == ["docs/spec.md"]
    assert plan["skipped"] == [{"path": "docs/logo.png", "reason": "binary (NUL byte at offset 4)"}]


def test_continue_names_a_pinned_blob_the_clone_lacks_and_the_fix(
    repo: Path, cli: Any, make_simulator: Any
) -> None:
    base_commit(repo)
    sim = make_simulator(answer_words=60)
    first = review(cli, sim, "--max-tokens", "20", "--max-continuations", "0")
    path = repo / first.json()["segments"][0]["record_path"]
    record = json.loads(path.read_text())
    record["git"]["files"][0]["blob"] = "0" * 40
    path.write_text(json.dumps(record))
    answer = first.json()["segments"][0]["answer_path"]
    resumed = cli("continue", answer, "--endpoint", sim.base_url)
    assert resumed.code == 16
    assert "error: context file docs/spec.md: blob 0000000 (commit " in resumed.err
    assert "git fetch --unshallow" in resumed.err
    assert len(sim.chat_requests()) == 1


def test_staged_during_a_conflicted_merge_is_refused_saying_why(repo: Path, cli: Any) -> None:
    base_commit(repo)
    git(repo, "checkout", "-q", "-b", "other")
    commit(repo, "theirs", {"docs/spec.md": "theirs\n"})
    git(repo, "checkout", "-q", "-")
    commit(repo, "ours", {"docs/spec.md": "ours\n"})
    merge = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "other"]
    assert subprocess.run(merge, cwd=repo, capture_output=True).returncode == 1
    result = cli("run", "-p", "x", "--dry-run", "--staged")
    assert result.code == 3
    assert "error: --staged: the index cannot be written as a tree (a merge?)" in result.err


def test_staged_with_nothing_staged_is_refused_saying_so(repo: Path, cli: Any) -> None:
    base_commit(repo)
    result = cli("run", "-p", "x", "--dry-run", "--staged")
    assert result.code == 3
    assert "error: the staged change shows nothing to review" in result.err
