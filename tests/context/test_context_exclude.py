"""``--exclude`` (git pathspecs) leaves out what folders, globs and changes list, and a file a
folder lists under a name that cannot be shown faithfully is left out with a warning instead of
sinking ``-c .`` (issue #30, rough edges)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.git import base_commit, commit

Cli = Any


def _dry(cli: Cli, *args: str) -> Any:
    r = cli("run", "--dry-run", "--json", "-p", "x", *args)
    assert r.code == 0, r.err
    return r.json()


def _sent(cli: Cli, *args: str) -> list[str]:
    return [f["path"] for f in _dry(cli, *args)["context_files"]]


def _left_out(cli: Cli, *args: str) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in _dry(cli, *args)["skipped"]}


@pytest.mark.parametrize(
    ("pattern", "sent"),
    [
        ("src", [".gitignore", "docs/spec.md"]),  # a folder: everything below it
        ("src/", [".gitignore", "docs/spec.md"]),
        ("*.py", [".gitignore", "docs/spec.md"]),  # a wildcard matches across /
        ("src/pkg/mean.py", [".gitignore", "docs/spec.md", "src/pkg/__init__.py"]),
        ("docs/*", [".gitignore", "src/pkg/__init__.py", "src/pkg/mean.py"]),
        ("nothing", [".gitignore", "docs/spec.md", "src/pkg/__init__.py", "src/pkg/mean.py"]),
    ],
)
def test_exclude_leaves_out_what_a_folder_lists_as_a_git_pathspec(
    repo: Path, cli: Cli, pattern: str, sent: list[str]
) -> None:
    assert _sent(cli, "-c", ".", "--exclude", pattern) == sent


def test_exclude_is_repeatable(repo: Path, cli: Cli) -> None:
    args = ("-c", ".", "--exclude", "docs", "--exclude", "src/pkg/__init__.py")
    assert _sent(cli, *args) == [".gitignore", "src/pkg/mean.py"]


def test_dry_run_lists_what_exclude_left_out_and_why(repo: Path, cli: Cli) -> None:
    assert _left_out(cli, "-c", "src", "--exclude", "*/mean.py") == {
        "src/pkg/mean.py": "matches --exclude"
    }


def test_a_file_named_explicitly_is_sent_even_if_excluded(repo: Path, cli: Cli) -> None:
    assert _sent(cli, "-c", "docs/spec.md", "--exclude", "docs") == ["docs/spec.md"]


def test_a_folder_all_of_whose_files_are_excluded_is_refused_saying_so(
    repo: Path, cli: Cli
) -> None:
    r = cli("run", "--dry-run", "-p", "x", "-c", "src", "--exclude", "src/pkg")
    assert r.code == 3
    assert "context folder src: nothing it holds can be sent" in r.err
    assert "matches --exclude" in r.err


def test_git_exclude_magic_in_a_context_spec_works_like_exclude(repo: Path, cli: Cli) -> None:
    assert _sent(cli, "-c", "src", "-c", ":!src/pkg/mean.py") == ["src/pkg/__init__.py"]


def test_exclude_leaves_a_changed_file_out_of_the_diff(repo: Path, cli: Cli) -> None:
    a = base_commit(repo)
    b = commit(repo, "two", {"src/pkg/mean.py": "x = 2\n", "docs/spec.md": "# Spec 2\n"})
    plan = _dry(cli, "--diff", f"{a}..{b}", "--exclude", "docs")
    assert plan["git"]["diff"]["shown"] == ["src/pkg/mean.py"]
    assert plan["git"]["diff"]["left_out"] == [["docs/spec.md", "matches --exclude"]]


def test_a_diff_review_with_an_excluded_file_verifies(repo: Path, cli: Cli, simulator: Any) -> None:
    a = base_commit(repo)
    b = commit(repo, "two", {"src/pkg/mean.py": "x = 2\n", "docs/spec.md": "# Spec 2\n"})
    r = cli("run", "-p", "x", "--diff", f"{a}..{b}", "--exclude", "docs",
            "--endpoint", simulator.base_url)  # fmt: skip
    assert r.code == 0, r.err
    assert cli("verify", "--strict").code == 0


def test_exclude_applies_to_files_read_from_a_commit(repo: Path, cli: Cli) -> None:
    base_commit(repo)
    assert _sent(cli, "--rev", "HEAD", "-c", ".", "--exclude", "*.py") == [
        ".gitignore",
        "docs/spec.md",
    ]


def test_exclude_in_a_manifest_entry(repo: Path, cli: Cli) -> None:
    (repo / "reviews.toml").write_text(
        '[[review]]\ntopic = "t"\nprompt = "x"\ncontext = ["src"]\nexclude = ["*/__init__.py"]\n',
        encoding="utf-8",
    )
    r = cli("batch", "reviews.toml", "--dry-run", "--json")
    assert r.code == 0, r.err
    (entry,) = r.json()["entries"]
    assert entry["context_files"] == 1
    assert entry["left_out"] == [{"path": "src/pkg/__init__.py", "reason": "matches exclude"}]


# ------------------------------------------------------------------- names a folder lists


@pytest.mark.parametrize("name", ["bad\u200bname.py", "bad\nname.py", "bad\u202ename.py"])
def test_a_badly_named_file_a_folder_lists_is_left_out_with_a_warning(
    repo: Path, cli: Cli, simulator: Any, name: str
) -> None:
    (repo / "src" / name).write_text("x = 1\n", encoding="utf-8")
    r = cli("run", "-c", "src", "-p", "x", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    assert "deepseek-review: skipped src/bad" in r.err
    assert "name holds control characters" in r.err
    assert _sent(cli, "-c", "src") == ["src/pkg/__init__.py", "src/pkg/mean.py"]


def test_a_badly_named_file_named_explicitly_is_still_refused(repo: Path, cli: Cli) -> None:
    (repo / "src" / "bad\u200bname.py").write_text("x = 1\n", encoding="utf-8")
    r = cli("run", "--dry-run", "-p", "x", "-c", "src/bad\u200bname.py")
    assert r.code == 3
    assert "name holds control characters" in r.err


def test_a_badly_named_committed_file_is_left_out_of_a_review_at_a_commit(
    repo: Path, cli: Cli
) -> None:
    commit(repo, "base", {"src/bad\u200bname.py": "x = 1\n"})
    left = _left_out(cli, "--rev", "HEAD", "-c", "src")
    assert "name holds control characters" in left["src/bad\u200bname.py"]
