"""Context gathering: which files a review reads, in what order, and what it refuses.

Listing behaviour is observed through ``run --dry-run --json`` (the paths a receipt would
name); every refusal is checked end to end: exit 3, one stderr line naming the path, no
request reached the simulator and nothing was written under ``reviews/``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.context.gather import ContextLimits, gather_context
from deepseek_review.errors import InputError
from tests.support.cli import files_under
from tests.support.context import assert_refused, run_against, write
from tests.support.git import git

Cli = Callable[..., Any]


def listed(cli: Cli, *specs: str, extra: tuple[str, ...] = ()) -> list[str]:
    """The repo-relative paths a review of ``specs`` would send, in order."""
    args = ["run", "--dry-run", "--json", "-p", "Review.", *extra]
    for spec in specs:
        args += ["-c", spec]
    r = cli(*args)
    assert r.code == 0, r.err
    return [f["path"] for f in r.json()["context_files"]]


# --------------------------------------------------------------------------- what is listed


def test_single_file_is_listed_repo_relative(repo, cli):
    assert listed(cli, "docs/spec.md") == ["docs/spec.md"]


def test_dot_slash_and_redundant_segments_are_normalised(repo, cli):
    assert listed(cli, "./docs//spec.md", "src/../docs/spec.md") == ["docs/spec.md"]


def test_folder_lists_its_files_sorted(repo, cli):
    assert listed(cli, "src") == ["src/pkg/__init__.py", "src/pkg/mean.py"]


def test_recursive_glob_matches_files_at_every_depth(repo, cli):
    write(repo, "src/top.py")
    write(repo, "src/notes.txt")
    assert listed(cli, "src/**/*.py") == ["src/pkg/__init__.py", "src/pkg/mean.py", "src/top.py"]


def test_single_star_glob_stays_within_one_folder(repo, cli):
    write(repo, "src/top.py")
    assert listed(cli, "src/*.py") == ["src/top.py"]


def test_specs_keep_the_order_given(repo, cli):
    assert listed(cli, "src/pkg/mean.py", "docs/spec.md") == ["src/pkg/mean.py", "docs/spec.md"]


def test_files_named_twice_are_listed_once_at_first_mention(repo, cli):
    got = listed(cli, "src/pkg/mean.py", "docs", "src", "src/pkg/mean.py", "src/**/*.py")
    assert got == ["src/pkg/mean.py", "docs/spec.md", "src/pkg/__init__.py"]


def test_empty_file_found_in_a_folder_is_included(repo, cli):
    assert "src/pkg/__init__.py" in listed(cli, "src")


# --------------------------------------------------------------------------- git ignore rules


def test_folder_honours_root_gitignore(repo, cli):
    write(repo, "src/debug.log")
    write(repo, "build/out.py")
    got = listed(cli, ".")
    assert "src/debug.log" not in got
    assert "build/out.py" not in got
    assert "src/pkg/mean.py" in got


def test_glob_honours_root_gitignore(repo, cli):
    write(repo, "build/gen.py")
    assert listed(cli, "**/*.py") == ["src/pkg/__init__.py", "src/pkg/mean.py"]


def test_glob_honours_nested_gitignore(repo, cli):
    write(repo, "src/.gitignore", "generated_*.py\n")
    write(repo, "src/pkg/generated_api.py")
    write(repo, "generated_top.py")
    got = listed(cli, "**/*.py")
    assert "src/pkg/generated_api.py" not in got
    assert "generated_top.py" in got


def test_negation_in_gitignore_brings_a_file_back(repo, cli):
    (repo / ".gitignore").write_text("*.log\n!keep.log\n", encoding="utf-8")
    write(repo, "keep.log")
    write(repo, "drop.log")
    got = listed(cli, ".")
    assert "keep.log" in got
    assert "drop.log" not in got


def test_git_info_exclude_is_honoured(repo, cli):
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("private_notes.md\n", encoding="utf-8")
    write(repo, "private_notes.md")
    assert "private_notes.md" not in listed(cli, ".")


def test_tracked_file_matching_gitignore_is_listed_as_git_lists_it(repo, cli):
    write(repo, "vendor/fixture.log")
    git(repo, "add", "-f", "vendor/fixture.log")
    assert listed(cli, "vendor") == ["vendor/fixture.log"]


def test_untracked_files_are_included(repo, cli):
    git(repo, "add", "docs/spec.md")
    write(repo, "docs/draft.md", "draft\n")
    assert listed(cli, "docs") == ["docs/draft.md", "docs/spec.md"]


def test_git_folder_is_never_listed(repo, cli):
    got = listed(cli, ".")
    assert got
    assert not [p for p in got if p == ".git" or p.startswith(".git/")]


def test_git_folder_file_named_explicitly_is_refused(repo, simulator, cli):
    r = run_against(cli, simulator, "-c", ".git/config")
    assert_refused(r, simulator, repo, ".git/config")


def test_ignored_file_named_explicitly_is_taken(repo, cli):
    write(repo, "run.log", "log line\n")
    assert listed(cli, "run.log") == ["run.log"]


def test_file_deleted_from_the_work_tree_but_still_tracked_is_skipped(repo, cli):
    write(repo, "src/pkg/old.py")
    git(repo, "add", "src")
    (repo / "src" / "pkg" / "old.py").unlink()
    assert listed(cli, "src") == ["src/pkg/__init__.py", "src/pkg/mean.py"]


def test_nested_git_repository_is_skipped_by_a_folder(repo, cli):
    nested = repo / "third_party" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    write(nested, "lib.py")
    write(repo, "third_party/README.md", "vendored\n")
    assert listed(cli, "third_party") == ["third_party/README.md"]


def test_fifo_found_in_a_folder_is_skipped_as_git_skips_it(repo, cli):
    os.mkfifo(repo / "docs" / "pipe")
    assert listed(cli, "docs") == ["docs/spec.md"]


def test_symlink_to_a_folder_inside_the_root_is_skipped_by_a_folder(repo, cli):
    (repo / "docs" / "code").symlink_to(repo / "src", target_is_directory=True)
    assert listed(cli, "docs") == ["docs/spec.md"]


def test_existing_file_with_glob_characters_is_taken_literally(repo, cli):
    write(repo, "app/[id]/page.tsx", "export {}\n")
    write(repo, "app/i/page.tsx", "export {}\n")
    assert listed(cli, "app/[id]/page.tsx") == ["app/[id]/page.tsx"]


def test_glob_characters_match_when_no_such_file_exists(repo, cli):
    write(repo, "app/i/page.tsx", "export {}\n")
    assert listed(cli, "app/[ix]/page.tsx") == ["app/i/page.tsx"]


# --------------------------------------------------------------------------- outside git


@pytest.fixture
def plain_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder that is not a git work tree, with root and nested .gitignore files."""
    root = tmp_path / "plain"
    write(root, ".gitignore", "*.log\nbuild/\n!keep.log\n")
    write(root, "src/.gitignore", "generated_*.py\n")
    write(root, "src/app.py")
    write(root, "src/generated_api.py")
    write(root, "src/trace.log")
    write(root, "keep.log")
    write(root, "build/out.py")
    write(root, "generated_top.py")
    monkeypatch.chdir(root)
    return root


def test_outside_git_the_root_and_nested_gitignore_are_honoured(plain_tree, cli):
    got = listed(cli, ".", extra=("--repo-root", str(plain_tree)))
    assert got == [
        ".gitignore",
        "generated_top.py",
        "keep.log",
        "src/.gitignore",
        "src/app.py",
    ]


def test_outside_git_a_glob_honours_the_gitignore_files(plain_tree, cli):
    got = listed(cli, "**/*.py", extra=("--repo-root", str(plain_tree)))
    assert got == ["generated_top.py", "src/app.py"]


def test_outside_git_a_fifo_in_a_folder_is_skipped(plain_tree, cli):
    os.mkfifo(plain_tree / "src" / "pipe")
    assert "src/pipe" not in listed(cli, "src", extra=("--repo-root", str(plain_tree)))


def test_outside_git_a_folder_spec_lists_only_that_folder(plain_tree, cli):
    assert listed(cli, "src", extra=("--repo-root", str(plain_tree))) == [
        "src/.gitignore",
        "src/app.py",
    ]


def test_outside_git_the_fallback_lists_what_git_lists(plain_tree, cli):
    """The pathspec fallback lists exactly what git lists for the same tree."""
    outside = listed(cli, ".")
    git(plain_tree, "init", "-q")
    from deepseek_review.git import runner as repo

    repo.forget_git_facts()
    assert listed(cli, ".") == outside


# --------------------------------------------------------------------------- repo root


def test_repo_root_is_the_git_toplevel_when_run_from_a_subfolder(repo, cli, monkeypatch):
    monkeypatch.chdir(repo / "src" / "pkg")
    assert listed(cli, "../../docs/spec.md") == ["docs/spec.md"]


def test_repo_root_option_wins_over_the_git_toplevel(repo, cli):
    assert listed(cli, "mean.py", extra=("--repo-root", "src/pkg")) == ["mean.py"]


def test_repo_root_is_the_current_folder_outside_git(tmp_path, cli, monkeypatch):
    write(tmp_path / "loose", "notes/a.md", "a\n")
    monkeypatch.chdir(tmp_path / "loose")
    assert listed(cli, "notes/a.md") == ["notes/a.md"]


def test_repo_root_that_is_not_a_folder_is_refused(repo, cli):
    r = cli("run", "--dry-run", "-p", "x", "-c", "docs/spec.md", "--repo-root", "nowhere")
    assert r.code == 2
    assert "nowhere" in r.err


# --------------------------------------------------------------------------- refusals


def test_absolute_path_elsewhere_is_refused(repo, simulator, cli, tmp_path):
    other = write(tmp_path, "elsewhere/secret.md", "no\n")
    r = run_against(cli, simulator, "-c", str(other))
    assert_refused(r, simulator, repo, str(other), "outside")


def test_absolute_path_inside_the_root_is_accepted_as_relative(repo, cli):
    assert listed(cli, str(repo / "docs" / "spec.md")) == ["docs/spec.md"]


def test_dotdot_path_leading_out_is_refused(repo, simulator, cli, tmp_path):
    write(tmp_path, "outside.md", "no\n")
    r = run_against(cli, simulator, "-c", "../outside.md")
    assert_refused(r, simulator, repo, "../outside.md", "outside")


def test_glob_with_dotdot_is_refused(repo, simulator, cli, tmp_path):
    write(tmp_path, "outside.md", "no\n")
    r = run_against(cli, simulator, "-c", "../*.md")
    assert_refused(r, simulator, repo, "../*.md")


def test_symlinked_file_leading_out_is_refused(repo, simulator, cli, tmp_path):
    target = write(tmp_path, "outside/secret.md", "no\n")
    (repo / "docs" / "link.md").symlink_to(target)
    r = run_against(cli, simulator, "-c", "docs/link.md")
    assert_refused(r, simulator, repo, "docs/link.md", "symlink")


def test_symlinked_folder_leading_out_is_refused(repo, simulator, cli, tmp_path):
    write(tmp_path, "outside/secret.md", "no\n")
    (repo / "ext").symlink_to(tmp_path / "outside", target_is_directory=True)
    r = run_against(cli, simulator, "-c", "ext")
    assert_refused(r, simulator, repo, "ext", "symlink")


def test_file_through_a_symlinked_folder_leading_out_is_refused(repo, simulator, cli, tmp_path):
    write(tmp_path, "outside/secret.md", "no\n")
    (repo / "ext").symlink_to(tmp_path / "outside", target_is_directory=True)
    r = run_against(cli, simulator, "-c", "ext/secret.md")
    assert_refused(r, simulator, repo, "ext/secret.md", "symlink")


def test_symlink_inside_the_root_is_followed_and_named_as_given(repo, cli):
    (repo / "docs" / "alias.md").symlink_to(repo / "docs" / "spec.md")
    assert listed(cli, "docs/alias.md") == ["docs/alias.md"]


def test_missing_file_is_refused(repo, simulator, cli):
    r = run_against(cli, simulator, "-c", "docs/missing.md")
    assert_refused(r, simulator, repo, "docs/missing.md", "no such file")


def test_missing_file_after_good_ones_refuses_the_whole_set(repo, simulator, cli):
    r = run_against(cli, simulator, "-c", "docs/spec.md", "-c", "docs/missing.md")
    assert_refused(r, simulator, repo, "docs/missing.md")


def test_binary_context_file_is_refused_naming_it(repo, simulator, cli):
    (repo / "docs" / "image.md").write_bytes(b"PNG\x00\x01\x02 not text")
    r = run_against(cli, simulator, "-c", "docs/image.md")
    assert_refused(r, simulator, repo, "docs/image.md", "binary")


def test_non_utf8_file_is_refused_naming_it(repo, simulator, cli):
    (repo / "docs" / "latin1.md").write_bytes("caf\u00e9\n".encode("latin-1"))
    r = run_against(cli, simulator, "-c", "docs/latin1.md")
    assert_refused(r, simulator, repo, "docs/latin1.md", "UTF-8")


def test_pattern_matching_nothing_is_refused_naming_it(repo, simulator, cli):
    r = run_against(cli, simulator, "-c", "src/**/*.rs")
    assert_refused(r, simulator, repo, "src/**/*.rs", "matches no file")


def test_pattern_matching_only_ignored_files_is_refused(repo, simulator, cli):
    write(repo, "build/a.py")
    r = run_against(cli, simulator, "-c", "build/*.py")
    assert_refused(r, simulator, repo, "build/*.py")


def test_folder_holding_only_ignored_files_is_refused(repo, simulator, cli):
    write(repo, "build/a.py")
    r = run_against(cli, simulator, "-c", "build")
    assert_refused(r, simulator, repo, "build")


def test_file_over_max_file_bytes_is_refused_naming_it(repo, simulator, cli):
    write(repo, "docs/big.md", "a" * 101)
    r = run_against(cli, simulator, "-c", "docs/big.md", "--max-file-bytes", "100")
    assert_refused(r, simulator, repo, "docs/big.md", "101", "--max-file-bytes")


def test_file_exactly_at_max_file_bytes_is_accepted(repo, cli):
    write(repo, "docs/edge.md", "a" * 100)
    assert listed(cli, "docs/edge.md", extra=("--max-file-bytes", "100")) == ["docs/edge.md"]


def test_total_over_max_context_bytes_is_refused_naming_the_file_that_tips_it(repo, simulator, cli):
    write(repo, "docs/a.md", "a" * 60)
    write(repo, "docs/b.md", "b" * 60)
    r = run_against(
        cli, simulator, "-c", "docs/a.md", "-c", "docs/b.md", "--max-context-bytes", "100"
    )
    assert_refused(r, simulator, repo, "docs/b.md", "--max-context-bytes")


def test_fifo_inside_the_repo_is_refused_as_not_a_regular_file(repo, simulator, cli):
    os.mkfifo(repo / "docs" / "pipe")
    r = run_against(cli, simulator, "-c", "docs/pipe")
    assert_refused(r, simulator, repo, "docs/pipe", "not a regular file")


def test_device_inside_the_repo_is_refused_as_not_a_regular_file(repo, simulator, cli):
    try:
        os.mknod(repo / "docs" / "dev", 0o600 | 0o020000, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("cannot create a device node here")
    r = run_against(cli, simulator, "-c", "docs/dev")
    assert_refused(r, simulator, repo, "docs/dev", "not a regular file")


def test_explicit_empty_file_is_refused(repo, simulator, cli):
    write(repo, "docs/empty.md", "")
    r = run_against(cli, simulator, "-c", "docs/empty.md")
    assert_refused(r, simulator, repo, "docs/empty.md", "empty")


def test_file_name_with_a_newline_is_refused(repo, simulator, cli):
    write(repo, "docs/two\nlines.md", "text\n")
    r = run_against(cli, simulator, "-c", "docs/two\nlines.md")
    assert_refused(r, simulator, repo, "two\\nlines.md")


def test_file_name_with_a_newline_found_in_a_folder_is_left_out_with_a_warning(
    repo, simulator, cli
):
    write(repo, "docs/two\nlines.md", "text\n")
    r = run_against(cli, simulator, "-c", "docs", "--json")
    assert r.code == 0, r.err
    assert "skipped docs/two\\x0alines.md: name holds control characters" in r.err
    assert r.json()["context_files"] == ["docs/spec.md"]


def test_file_name_that_is_not_utf8_found_in_a_folder_is_left_out_with_a_warning(
    repo, simulator, cli
):
    with open(os.fsencode(repo / "docs") + b"/caf\xe9.md", "wb") as fh:
        fh.write(b"text\n")
    r = run_against(cli, simulator, "-c", "docs", "--json")
    assert r.code == 0, r.err
    assert "skipped docs/caf\\udce9.md: name is not valid UTF-8" in r.err
    assert r.json()["context_files"] == ["docs/spec.md"]


def test_file_name_with_a_newline_named_explicitly_is_refused(repo, simulator, cli):
    write(repo, "docs/two\nlines.md", "text\n")
    r = run_against(cli, simulator, "-c", "docs/two\nlines.md")
    assert_refused(r, simulator, repo, "two\\nlines.md")


def test_no_context_at_all_is_refused(repo, simulator, cli):
    r = run_against(cli, simulator)
    assert r.code != 0
    assert simulator.chat_requests() == []
    assert files_under(repo / "reviews") == []


# --------------------------------------------------------------------------- the library


def test_gathered_files_carry_text_size_and_hash(repo):
    files = gather_context(repo, ["docs/spec.md"])
    data = (repo / "docs" / "spec.md").read_bytes()
    assert [f.path for f in files] == ["docs/spec.md"]
    assert files[0].text.encode("utf-8") == data
    assert files[0].size == len(data)
    import hashlib

    assert files[0].sha256 == "sha256:" + hashlib.sha256(data).hexdigest()


def test_limits_must_be_positive():
    from deepseek_review.errors import ConfigError

    # The library names the option by its key (the command line by its flag).
    with pytest.raises(ConfigError, match=r"^max_file_bytes must be positive, got 0$"):
        ContextLimits(max_file_bytes=0)
    with pytest.raises(ConfigError, match=r"^max_context_bytes must be positive, got -1$"):
        ContextLimits(max_context_bytes=-1)


def test_library_refusal_is_an_input_error_naming_the_path(repo):
    with pytest.raises(InputError, match=r"docs/nope\.md"):
        gather_context(repo, ["docs/nope.md"])
