"""Reviews of a change (``--diff``, ``--staged``) on real git repositories made here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.git import (
    base_commit,
    commit,
    dry,
    git,
    user_text,
)
from tests.support.secrets import (
    REMOTE,
)

# --------------------------------------------------------------------------- ranges


def test_two_dot_range_shows_the_change_from_a_to_b(repo: Path, cli: Any) -> None:
    a = base_commit(repo)
    b = commit(
        repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return sum(xs) / max(len(xs), 1)\n"}
    )
    plan = dry(cli, "--diff", f"{a}..{b}")
    assert plan["git"]["commits"] == {"base": a, "head": b, "merge_base": None}
    assert plan["git"]["diff"]["shown"] == ["src/pkg/mean.py"]
    assert plan["context_files"] == []


def test_single_revision_means_from_the_merge_base_to_head(repo: Path, cli: Any) -> None:
    base_commit(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    head = commit(repo, "feature", {"src/pkg/new.py": "X = 1\n"})
    git(repo, "checkout", "-q", "-")
    main = commit(repo, "main moves on", {"docs/other.md": "other\n"})
    git(repo, "checkout", "-q", "feature")
    plan = dry(cli, "--diff", main)
    commits = plan["git"]["commits"]
    assert commits["head"] == head and commits["merge_base"] == commits["base"] != main
    assert plan["git"]["diff"]["shown"] == ["src/pkg/new.py"]


def test_three_dot_range_leaves_out_what_the_base_branch_did(repo: Path, cli: Any) -> None:
    base_commit(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "feature", {"src/pkg/new.py": "X = 1\n"})
    git(repo, "checkout", "-q", "-")
    commit(repo, "main moves on", {"docs/other.md": "other\n"})
    plan = dry(cli, "--diff", "HEAD...feature")
    assert plan["git"]["diff"]["shown"] == ["src/pkg/new.py"]


def test_a_bad_range_is_refused_naming_the_option_and_value(repo: Path, cli: Any) -> None:
    base_commit(repo)
    result = cli("run", "-p", "x", "--dry-run", "--diff", "nope..HEAD")
    assert result.code == 3
    assert "error: --diff nope: not a commit of the repository" in result.err


def test_a_range_that_looks_like_an_option_is_never_passed_to_git(repo: Path, cli: Any) -> None:
    base_commit(repo)
    result = cli("run", "-p", "x", "--dry-run", "--diff=--output=/tmp/owned")
    assert result.code == 3
    assert "error: --diff '--output=/tmp/owned': not a revision" in result.err
    assert not Path("/tmp/owned").exists()


# --------------------------------------------------------------------------- kinds of change


def test_renames_deletions_binary_and_mode_changes_are_shown_as_git_shows_them(
    repo: Path, cli: Any
) -> None:
    (repo / "run.sh").write_text("echo hi\n", encoding="utf-8")
    (repo / "old.txt").write_text("line\n" * 20, encoding="utf-8")
    a = base_commit(repo)
    (repo / "run.sh").chmod(0o755)
    git(repo, "mv", "old.txt", "renamed.txt")
    b = commit(
        repo,
        "many",
        {"docs/spec.md": None, "logo.png": b"\x89PNG\0\1\2", "src/pkg/__init__.py": "X = 1\n"},
    )
    text = user_text(repo, "--diff", f"{a}..{b}", "--include-binary")
    assert "rename from old.txt\nrename to renamed.txt" in text
    assert "deleted file mode 100644" in text
    assert "old mode 100644\nnew mode 100755" in text
    assert "Binary files /dev/null and b/logo.png differ" in text


def test_a_lock_file_and_binary_files_are_left_out_and_listed(repo: Path, cli: Any) -> None:
    a = base_commit(repo)
    b = commit(repo, "deps", {"poetry.lock": "lock\n", "logo.png": b"\0\1", "src/pkg/a.py": "A\n"})
    plan = dry(cli, "--diff", f"{a}..{b}")
    assert plan["git"]["diff"]["shown"] == ["src/pkg/a.py"]
    assert {s["path"]: s["reason"] for s in plan["skipped"]} == {
        "logo.png": "binary (--include-binary puts it back)",
        "poetry.lock": "lock file (--include-lock-files puts it back)",
    }


def test_the_dry_run_text_lists_what_was_left_out_with_the_flag(repo: Path, cli: Any) -> None:
    a = base_commit(repo)
    b = commit(repo, "deps", {"poetry.lock": "lock\n", "src/pkg/a.py": "A\n"})
    result = cli("run", "-p", "x", "--dry-run", "--diff", f"{a}..{b}")
    assert result.code == 0, result.err
    assert "  poetry.lock  lock file (--include-lock-files puts it back)" in result.out
    assert "change         1 file (" in result.out


def test_files_marked_generated_are_left_out_unless_asked_for(repo: Path, cli: Any) -> None:
    (repo / ".gitattributes").write_text("gen/* linguist-generated\n", encoding="utf-8")
    a = base_commit(repo)
    b = commit(repo, "gen", {"gen/api.py": "X = 1\n", "src/pkg/a.py": "A\n"})
    assert dry(cli, "--diff", f"{a}..{b}")["git"]["diff"]["shown"] == ["src/pkg/a.py"]
    kept = dry(cli, "--diff", f"{a}..{b}", "--include-generated")["git"]["diff"]["shown"]
    assert kept == ["gen/api.py", "src/pkg/a.py"]


def test_a_lock_file_comes_back_with_its_flag(repo: Path, cli: Any) -> None:
    a = base_commit(repo)
    b = commit(repo, "deps", {"poetry.lock": "lock\n"})
    plan = dry(cli, "--diff", f"{a}..{b}", "--include-lock-files")
    assert plan["git"]["diff"]["shown"] == ["poetry.lock"]


def test_a_change_of_only_noise_is_refused_saying_why(repo: Path, cli: Any) -> None:
    a = base_commit(repo)
    b = commit(repo, "deps", {"poetry.lock": "lock\n"})
    result = cli("run", "-p", "x", "--dry-run", "--diff", f"{a}..{b}")
    assert result.code == 3
    assert "shows nothing to review (poetry.lock: lock file)" in result.err


def test_whole_files_adds_the_new_versions_pinned_to_their_blobs(repo: Path, cli: Any) -> None:
    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    plan = dry(cli, "--diff", f"{a}..{b}", "--whole-files")
    assert [f["path"] for f in plan["context_files"]] == ["src/pkg/mean.py"]
    (pin,) = plan["git"]["files"]
    assert pin["commit"] == b and pin["path"] == "src/pkg/mean.py"


def test_context_files_come_after_the_change_in_the_prompt(repo: Path, cli: Any) -> None:
    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    text = user_text(repo, "--diff", f"{a}..{b}", "--context", "docs/spec.md")
    assert text.index("## Change from") < text.index("## File 1 of 1: docs/spec.md")


# --------------------------------------------------------------------------- determinism


def test_the_request_of_a_diff_review_is_the_same_bytes_in_separate_processes(
    repo: Path,
) -> None:
    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    code = (
        "import sys; from deepseek_review import api; "
        f"p = api.plan_review(prompt='x', diff='{a}..{b}', repo_root='.'); "
        "sys.stdout.write(p.prepared.prompt_sha256)"
    )
    runs = [
        subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
        for _ in range(2)
    ]
    git(repo, "config", "diff.algorithm", "histogram")
    git(repo, "config", "diff.noprefix", "true")
    git(repo, "config", "diff.context", "9")
    runs.append(
        subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    )
    hashes = {r.stdout for r in runs}
    assert len(hashes) == 1 and next(iter(hashes)).startswith("sha256:"), [r.stderr for r in runs]


def test_the_record_pins_commits_and_the_diff_options(repo: Path, cli: Any, simulator: Any) -> None:
    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    result = cli(
        "run", "-p", "x", "--diff", f"{a}..{b}", "--diff-context", "5",
        "--endpoint", simulator.base_url, "--json",
    )  # fmt: skip
    assert result.code == 0, result.err
    segment = result.json()["segments"][0]
    record = json.loads((repo / segment["record_path"]).read_text())
    assert record["git"]["commits"] == {"base": a, "head": b, "merge_base": None}
    assert record["git"]["diff"]["context_lines"] == 5
    receipt = json.loads((repo / segment["receipt_path"]).read_text())
    assert receipt["context_files"] == ["src/pkg/mean.py"]


def test_the_diff_review_template_asks_for_new_paths_and_lines_around_the_change(
    repo: Path,
) -> None:
    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    text = user_text(repo, "--diff", f"{a}..{b}", "--template", "diff-review")
    assert text.index("# The change") < text.index("## Change from") < text.index("**1. VERDICT**")
    assert "the path and line\nthose of the new file" in text


# --------------------------------------------------------------------------- since the last review


def _reviewed_one_commit(repo: Path, cli: Any, simulator: Any) -> tuple[str, str]:
    """A base, one commit on it, and a review of that change: (base, the commit)."""
    a = base_commit(repo)
    (repo / ".gitignore").write_text("reviews/\n")
    first = commit(repo, "one", {"src/pkg/one.py": "ONE = 1\n"})
    result = cli("run", "-p", "x", "--diff", f"{a}..HEAD", "--endpoint", simulator.base_url)
    assert result.code == 0, result.err
    return a, first


def test_since_last_review_reviews_only_the_new_commits(
    repo: Path, cli: Any, simulator: Any
) -> None:
    a, first = _reviewed_one_commit(repo, cli, simulator)
    head = commit(repo, "two", {"src/pkg/two.py": "TWO = 2\n"})
    plan = dry(cli, "--diff", f"{a}..HEAD", "--since-last-review")
    assert plan["git"]["commits"] == {"base": first, "head": head, "merge_base": None}
    assert plan["git"]["diff"]["shown"] == ["src/pkg/two.py"]


def test_since_last_review_after_a_rebase_reviews_the_whole_range_and_says_so(
    repo: Path, cli: Any, simulator: Any
) -> None:
    a, _ = _reviewed_one_commit(repo, cli, simulator)
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--amend", "-m", "1'")
    result = cli("run", "-p", "x", "--dry-run", "--json", "--diff", f"{a}..HEAD",
                 "--since-last-review")  # fmt: skip
    assert result.code == 0, result.err
    assert result.json()["git"]["commits"]["base"] == a
    assert "which is not an ancestor of" in result.err
    assert "reviewing the whole change" in result.err


@pytest.mark.parametrize("dry_run", [(), ("--dry-run",)])
def test_since_last_review_with_nothing_new_exits_0_with_one_line_and_sends_nothing(
    repo: Path, cli: Any, simulator: Any, dry_run: tuple[str, ...]
) -> None:
    a, _ = _reviewed_one_commit(repo, cli, simulator)
    before = len(simulator.chat_requests())
    written = sorted(p.name for p in (repo / "reviews").iterdir())
    result = cli("run", "-p", "x", *dry_run, "--diff", f"{a}..HEAD", "--since-last-review",
                 "--endpoint", simulator.base_url)  # fmt: skip
    assert result.code == 0, result.err
    (line,) = result.err.splitlines()
    assert line.startswith("deepseek-review: nothing new since the last review (reviews/")
    assert line.endswith("; --since-last-review): nothing was sent")
    assert len(simulator.chat_requests()) == before
    assert sorted(p.name for p in (repo / "reviews").iterdir()) == written


def test_since_last_review_with_nothing_new_says_so_in_json(
    repo: Path, cli: Any, simulator: Any
) -> None:
    a, _ = _reviewed_one_commit(repo, cli, simulator)
    result = cli("run", "-p", "x", "--json", "--diff", f"{a}..HEAD", "--since-last-review",
                 "--endpoint", simulator.base_url)  # fmt: skip
    assert result.code == 0, result.err
    assert result.json()["status"] == "nothing_new"
    assert "nothing new since the last review" in result.json()["message"]


def test_a_batch_skips_an_entry_with_nothing_new_and_continues_a_truncated_one(
    repo: Path, cli: Any, make_simulator: Any
) -> None:
    """Issue 30 item 6: re-running a batch whose diff entry has nothing new must still resume
    the others (here a chain cut off the first time)."""
    sim = make_simulator(answer_words=200)
    a = base_commit(repo)
    commit(repo, "one", {"src/pkg/one.py": "ONE = 1\n"})
    (repo / "reviews.toml").write_text(
        f'[[review]]\ntopic = "long"\nprompt = "x"\ncontext = ["docs/spec.md"]\n'
        f"max_tokens = 60\n\n"
        f'[[review]]\ntopic = "pr"\nprompt = "x"\ndiff = "{a}..HEAD"\n'
        f"since_last_review = true\n",
        encoding="utf-8",
    )
    first = cli("batch", "reviews.toml", "--endpoint", sim.base_url, "--max-continuations", "0",
                "--report", "first.json")  # fmt: skip
    assert first.code == 11, first.err  # the long one stayed cut off
    again = cli("batch", "reviews.toml", "--endpoint", sim.base_url, "--max-continuations", "9",
                "--report", "again.json")  # fmt: skip
    assert again.code == 0, again.err
    entries = {e["topic"]: e for e in json.loads((repo / "again.json").read_text())["entries"]}
    assert entries["long"]["status"] == "ok"
    assert entries["long"]["new_segments"] >= 1
    assert entries["pr"]["status"] == "skipped"
    assert "nothing new since the last review" in entries["pr"]["reason"]
    assert "skipped pr (nothing new since the last review" in again.err


# --------------------------------------------------------------------------- manifests


def test_a_manifest_entry_reviews_a_change(repo: Path) -> None:
    from deepseek_review.batch.manifest import plan_manifest

    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    (repo / "r.toml").write_text(
        f'[[review]]\ntopic = "pr"\nprompt = "Review."\ndiff = "{a}..{b}"\n', encoding="utf-8"
    )
    (entry,) = plan_manifest(repo / "r.toml").entries
    assert entry.plan.receipt_paths == ("src/pkg/mean.py",)


def test_a_manifest_entry_may_not_review_the_staged_change(repo: Path) -> None:
    from deepseek_review.batch.manifest import ManifestError, plan_manifest

    base_commit(repo)
    (repo / "r.toml").write_text(
        '[[review]]\ntopic = "pr"\nprompt = "Review."\ncontext = "docs"\nstaged = true\n',
        encoding="utf-8",
    )
    try:
        plan_manifest(repo / "r.toml")
    except ManifestError as exc:
        problems = [str(p) for p in exc.problems]
    assert len(problems) == 1 and "staged" in problems[0], problems
    assert "a batch reviews commits, not what is staged at the moment" in problems[0]


def test_a_secret_the_change_adds_is_refused_before_a_remote_endpoint_gets_it(
    repo: Path, cli: Any, request: Any
) -> None:
    sent = request.getfixturevalue("offline")  # every request recorded, none reaches a server
    a = base_commit(repo)
    key = "AIza" + "Xk3_9bQ-vT2LmZr8wYp4HdN6sJcE1uGfO0a"
    b = commit(repo, "oops", {"src/pkg/cfg.py": f'KEY = "{key}"\n'})
    result = cli("run", "-p", "x", "--diff", f"{a}..{b}", "--endpoint", REMOTE)
    assert result.code == 8, result.err
    assert "error: <the change>:" in result.err and "looks like a secret" in result.err
    assert key[-12:] not in result.err
    assert sent.urls == []


def test_a_symlink_replaced_by_a_file_is_shown_as_git_shows_a_type_change(
    repo: Path, cli: Any
) -> None:
    (repo / "link").symlink_to("docs/spec.md")
    a = base_commit(repo)
    (repo / "link").unlink()
    b = commit(repo, "type", {"link": "now a file\n", "src/pkg/a.py": "A\n"})
    plan = dry(cli, "--diff", f"{a}..{b}")
    assert plan["git"]["diff"]["shown"] == ["link", "src/pkg/a.py"]
    text = user_text(repo, "--diff", f"{a}..{b}")
    assert "deleted file mode 120000" in text and "new file mode 100644" in text


def test_the_tools_own_output_in_a_change_is_left_out_and_listed(repo: Path, cli: Any) -> None:
    a = base_commit(repo)
    b = commit(repo, "reviews", {"reviews/old.md": "an answer\n", "src/pkg/a.py": "A\n"})
    plan = dry(cli, "--diff", f"{a}..{b}")
    assert plan["git"]["diff"]["shown"] == ["src/pkg/a.py"]
    assert plan["skipped"] == [{"path": "reviews/old.md", "reason": "the output folder"}]


def test_run_without_context_or_a_change_says_what_to_give(repo: Path, cli: Any) -> None:
    result = cli("run", "-p", "x", "--dry-run")
    assert result.code == 3
    assert (
        "error: no context given: pass --context with a file, folder or glob, or --diff or "
        "--staged to review a change"
    ) in result.err


def test_a_change_over_the_context_limit_is_refused_before_anything_is_sent(
    repo: Path, cli: Any
) -> None:
    a = base_commit(repo)
    b = commit(repo, "big", {"src/pkg/big.py": "X = 1\n" * 2000})
    result = cli(
        "run", "-p", "x", "--dry-run", "--diff", f"{a}..{b}", "--max-context-bytes", "5000"
    )
    assert result.code == 3
    assert f"error: the change {a[:7]} to {b[:7]} is " in result.err
    assert "bytes as framed, over --max-context-bytes 5000" in result.err


def test_a_manifest_entry_reads_its_context_from_a_commit(repo: Path) -> None:
    from deepseek_review.batch.manifest import plan_manifest

    a = base_commit(repo)
    (repo / "docs" / "spec.md").write_text("changed since\n", encoding="utf-8")
    (repo / "r.toml").write_text(
        '[[review]]\ntopic = "spec"\nprompt = "Review."\ncontext = "docs/spec.md"\nrev = "v1"\n',
        encoding="utf-8",
    )
    (entry,) = plan_manifest(repo / "r.toml").entries
    assert entry.plan.pins is not None and entry.plan.pins["files"][0]["commit"] == a
    assert "The mean of 2, 4 and 9 is 5." in entry.plan.texts[-1]


def test_an_empty_range_is_refused_saying_so(repo: Path, cli: Any) -> None:
    base_commit(repo)
    result = cli("run", "-p", "x", "--dry-run", "--diff", "v1..v1")
    assert result.code == 3
    assert "error: the change v1..v1 shows nothing to review" in result.err
