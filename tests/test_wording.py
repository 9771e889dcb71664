"""What a user reads (issue 30, rough edges): counts in the singular when there is one, a diff
review described as a diff, and the commands listed in the order of the workflow."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepseek_review.simulator import Simulator
from tests.test_git_processes import commit_all

Cli = Callable[..., Any]


def sending_line(err: str) -> str:
    return next(x for x in err.splitlines() if "sending " in x)


def test_a_run_of_one_file_says_one_context_file(repo: Path, cli: Cli, simulator: Simulator):
    r = cli("run", "-v", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    assert "sending 1 context file (61 bytes) to " in sending_line(r.err)


def test_a_run_of_two_files_says_files(repo: Path, cli: Cli, simulator: Simulator):
    r = cli("run", "-v", "-c", "docs/spec.md", "-c", "src/pkg/mean.py", "-p", "x",
            "--endpoint", simulator.base_url)  # fmt: skip
    assert r.code == 0, r.err
    assert "sending 2 context files (" in sending_line(r.err)


def change(repo: Path) -> None:
    """A commit changing two files: 3 lines of the spec and one line of the code."""
    commit_all(repo)
    (repo / "docs" / "spec.md").write_text("# Spec\n\nThe mean of 2, 4 and 9 is 5.\n")
    (repo / "src" / "pkg" / "mean.py").write_text("def mean(xs):\n    return sum(xs) / 3\n")
    commit_all(repo)


def test_a_diff_review_says_it_sends_a_diff_of_so_many_files_and_lines(
    repo: Path, cli: Cli, simulator: Simulator
):
    change(repo)
    patch = cli("run", "--diff", "HEAD~1..HEAD", "-p", "x", "--dry-run", "--json").json()
    assert patch["git"]["diff"]["shown"] == ["docs/spec.md", "src/pkg/mean.py"]
    r = cli("run", "-v", "--diff", "HEAD~1..HEAD", "-p", "x", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    line = sending_line(r.err)
    assert "sending a diff of 2 files (" in line and " lines) to " in line
    assert "context file" not in line


def test_a_diff_review_with_whole_files_counts_both(repo: Path, cli: Cli, simulator: Simulator):
    change(repo)
    r = cli("run", "-v", "--diff", "HEAD~1..HEAD", "--whole-files", "-p", "x",
            "--endpoint", simulator.base_url)  # fmt: skip
    assert r.code == 0, r.err
    line = sending_line(r.err)
    assert "sending a diff of 2 files (" in line and " lines) and 2 context files (" in line


def test_the_dry_run_of_a_diff_counts_its_lines_and_says_no_files_in_the_plural(
    repo: Path, cli: Cli
):
    change(repo)
    r = cli("run", "--diff", "HEAD~1..HEAD", "-p", "x", "--dry-run", "--server", "vllm")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    changed = next(x for x in lines if x.startswith("change "))
    assert changed.startswith("change         2 files (") and " lines), " in changed
    assert "context        0 files, 0 bytes" in lines


def test_the_dry_run_of_one_file_says_one_file(repo: Path, cli: Cli):
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--dry-run", "--server", "vllm")
    assert r.code == 0, r.err
    assert "context        1 file, 61 bytes" in r.out.splitlines()


def test_a_batch_dry_run_of_one_entry_says_one_file_and_one_entry(repo: Path, cli: Cli):
    (repo / "m.toml").write_text(
        '[[review]]\ntopic = "a"\nprompt = "x"\ncontext = "docs/spec.md"\n'
    )
    r = cli("batch", "m.toml", "--dry-run", "--server", "vllm")
    assert r.code == 0, r.err
    assert "(1 file, ~" in r.out
    assert "dry run: 1 entry checked" in r.err


def test_attest_of_one_segment_says_one_segment(
    repo: Path, cli: Cli, simulator: Simulator, tmp_path: Path
):
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    out = tmp_path / "predicate.json"
    r = cli("attest", "--output", str(out))
    assert r.code == 0, r.err
    assert f"attest: wrote {out} (1 segment)" in r.err


def test_help_lists_the_commands_in_the_order_of_the_workflow(cli: Cli):
    r = cli("--help")
    section = r.out.split("Commands:", 1)[1]
    listed = [
        line.split()[0] for line in section.splitlines() if line.startswith("  ") and line.split()
    ]
    expected = ["run", "continue", "show", "verify", "findings", "batch", "sign", "attest",
                "stats", "config", "simulator"]  # fmt: skip
    assert listed[: len(expected)] == expected
