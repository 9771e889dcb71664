"""Start-up of a review of files: only what planning it needs is imported.

Each module below costs a dry run milliseconds (its dataclasses, its regexes, its own
imports) and is needed only by another kind of review or by sending; a module-level import
that brings one back fails here. The command runs in its own process, as a user runs it.
"""

from __future__ import annotations

from pathlib import Path

from tests.test_git_processes import commit_all
from tests.test_startup import _spawn

#: Loaded only for a change (``--diff``/``--staged``), ``--rev``, reading answers, asking an
#: Ollama server, re-reading records, a random token, or pricing (only when prices are set).
NOT_FOR_A_DRY_RUN_OF_FILES = {
    "deepseek_review.gitdiff",
    "deepseek_review.gitchange",
    "deepseek_review.gitpatch",
    "deepseek_review.gitfiles",
    "deepseek_review.chatwire",
    "deepseek_review.ollama.probe",
    "deepseek_review.ollama.pricing",
    "deepseek_review.records.rebuild",
    "secrets",
}


def test_a_dry_run_of_files_loads_no_diff_answer_or_probe_machinery(repo: Path) -> None:
    commit_all(repo)
    # A server that is not Ollama: against Ollama a dry run asks what the run asks before
    # sending, and loads the probe for it (tests/test_dry_run_preflight.py).
    proc, modules = _spawn(
        repo, "run", "--dry-run", "-c", "docs/spec.md", "-p", "Check.", "--server", "vllm"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(modules & NOT_FOR_A_DRY_RUN_OF_FILES) == []


def test_a_dry_run_of_a_change_loads_the_diff_machinery_it_needs(repo: Path) -> None:
    commit_all(repo)
    (repo / "docs" / "spec.md").write_text("# Spec\n\nChanged.\n", encoding="utf-8")
    commit_all(repo)
    proc, modules = _spawn(repo, "run", "--dry-run", "--diff", "HEAD~1..HEAD", "-p", "Check.")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {"deepseek_review.gitchange", "deepseek_review.gitdiff"} <= modules
    assert "change         1 file (" in proc.stdout
