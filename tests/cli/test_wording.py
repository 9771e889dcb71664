"""What a user reads (issue 30, rough edges): counts in the singular when there is one, a diff
review described as a diff, the commands listed in the order of the workflow, and an option's
choices shown in the help and offered by the shell's completion."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.options.rows import TEMPLATES
from deepseek_review.testing.simulator import Simulator
from tests.support.git import commit_all

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


# --------------------------------------------------------------------------- choices


CHOICES = {
    ("run", "--template"): "[default|spec-review|code-review|diff-review|synthesis]",
    ("run", "--reasoning"): "[none|low|medium|high|max]",
    ("run", "--server"): "[ollama|llama.cpp|vllm|deepseek]",
    ("run", "--api"): "[openai|ollama]",
    ("run", "--continuation-style"): "[prefill|directive]",
    ("continue", "--server"): "[ollama|llama.cpp|vllm|deepseek]",
    ("batch", "--format"): "[toml|jsonl]",
    ("batch", "--reasoning"): "[none|low|medium|high|max]",
    ("findings", "--format"): "[json|sarif|rdjson|rdjsonl|github|markdown|codequality|patch]",
    ("findings", "--fail-on"): "[critical|major|minor|nit]",
}


@pytest.mark.parametrize(("command", "flag"), list(CHOICES))
def test_help_shows_the_choices_of_an_option_instead_of_its_type(cli: Cli, command: str, flag: str):
    r = cli(command, "--help")
    row = next(x for x in r.out.splitlines() if f"{flag} " in x and x.lstrip().startswith("-"))
    assert f"{flag} {CHOICES[command, flag]}" in row
    assert "<str>" not in row


def complete(words: str, cword: int) -> list[str]:
    """What the shell's completion offers for ``words`` (bash), from the console script."""
    env = {**os.environ, "_DEEPSEEK_REVIEW_COMPLETE": "complete_bash",
           "COMP_WORDS": f"deepseek-review {words}", "COMP_CWORD": str(cword)}  # fmt: skip
    script = Path(sys.executable).parent / "deepseek-review"
    out = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=60)
    return out.stdout.split()


@pytest.mark.parametrize(
    ("words", "cword", "offered"),
    [
        ("run --reasoning h", 3, ["high"]),
        ("run --reasoning ", 3, ["none", "low", "medium", "high", "max"]),
        ("run --template ", 3, list(TEMPLATES)),  # the bundled ones (a test keeps them so)
        ("run --server ", 3, ["ollama", "llama.cpp", "vllm", "deepseek"]),
        ("run --api o", 3, ["openai", "ollama"]),
        ("batch m.toml --format j", 4, ["jsonl"]),
        ("findings --format r", 3, ["rdjson", "rdjsonl"]),
        ("findings --fail-on m", 3, ["major", "minor"]),
    ],
)
def test_the_shell_completes_the_values_of_an_option(
    repo: Path, words: str, cword: int, offered: list[str]
):
    assert complete(words, cword) == offered


def test_the_template_choices_are_the_bundled_templates():
    from deepseek_review.options.rows import TEMPLATES
    from deepseek_review.reviewing.prompt import list_templates

    assert sorted(TEMPLATES) == list_templates()


def test_the_findings_format_choices_are_the_exporters():
    from deepseek_review.cli.findings_cmd import FORMATS
    from deepseek_review.finding.export import FORMATS as EXPORTERS

    assert list(FORMATS) == list(EXPORTERS)


def test_the_fail_on_choices_are_the_severities():
    from deepseek_review.cli.findings_cmd import SEVERITIES
    from deepseek_review.finding.model import SEVERITIES as KNOWN

    assert SEVERITIES == KNOWN


def test_a_finished_run_and_show_say_one_segment(repo: Path, cli: Cli, simulator: Simulator):
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    assert "deepseek-review: done: 1 segment, " in r.err
    answer = next(x for x in r.out.splitlines() if x.endswith(".md"))
    shown = cli("show", "-v", answer)
    assert shown.code == 0, shown.err
    assert "1 segment, every answer_sha256 checked" in shown.err


def test_a_review_still_cut_off_after_one_continuation_says_one(
    repo: Path, cli: Cli, make_simulator: Callable[..., Simulator]
):
    sim = make_simulator(answer_words=200)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url,
            "--max-tokens", "20", "--max-continuations", "1")  # fmt: skip
    assert r.code == 4, r.err
    assert "still truncated after 1 continuation; last segment: " in r.err
