"""Same commits and options, same diff bytes: whatever the user's or the repository's git
config, diff drivers and environment say, so verify and continue rebuild the request on
another machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import review
from tests.support.git import commit, git

#: A Python file whose change is far enough below ``def f`` and ``class A`` that the hunk
#: header names a function line, the thing diff drivers choose differently.
OLD = "import os\n\n\nclass A:\n    def f(self):\n" + "".join(
    f"        v{i} = {i}\n" for i in range(12)
)
NEW = OLD.replace("v9 = 9", "v9 = 99")


def change(repo: Path) -> str:
    a = commit(repo, "a", {"src/pkg/a.py": OLD, ".gitattributes": "*.py diff=python\n"})
    b = commit(repo, "b", {"src/pkg/a.py": NEW})
    return f"{a}..{b}"


def user_config(*pairs: str) -> None:
    """Settings in the user's own config (the test's ``GIT_CONFIG_GLOBAL``)."""
    for kv in pairs:
        key, _, value = kv.partition("=")
        subprocess.run(["git", "config", "--global", key, value], check=True, capture_output=True)


def planned(repo: Path, rng: str) -> tuple[str, str]:
    """The prompt's sha256 and the user message a review of ``rng`` would send."""
    from deepseek_review import api
    from deepseek_review.reviewing.plan import ReviewPlan

    plan = api.plan_review(prompt="Review.", diff=rng, repo_root=str(repo))
    assert isinstance(plan, ReviewPlan)
    return plan.prepared.prompt_sha256, plan.texts[-1]


def reviewed_diff(cli: Any, simulator: Any, rng: str) -> Any:
    run = review(cli, simulator, "--diff", rng, context=(), prompt="Review.")
    assert run.code == 0, run.err
    return run


def test_a_diff_driver_funcname_in_the_repository_config_does_not_shape_the_bytes(repo):
    rng = change(repo)
    before = planned(repo, rng)
    git(repo, "config", "diff.python.xfuncname", "^(    v[0-9]+.*)$")
    assert planned(repo, rng) == before


def test_a_diff_driver_funcname_in_the_user_config_does_not_shape_the_bytes(repo):
    rng = change(repo)
    before = planned(repo, rng)
    user_config("diff.python.funcname=^import.*$")
    assert planned(repo, rng) == before


def test_a_driver_marking_the_file_binary_in_user_config_does_not_shape_the_bytes(repo):
    rng = change(repo)
    before = planned(repo, rng)
    user_config("diff.python.binary=true")
    assert planned(repo, rng) == before


def test_the_hunk_header_is_gits_default_function_line_whatever_the_driver(repo):
    _, text = planned(repo, change(repo))
    assert "@@ -12,6 +12,6 @@ class A:\n" in text


@pytest.mark.parametrize(
    "setting",
    [
        "diff.noprefix=true",
        "diff.mnemonicPrefix=true",
        "diff.relative=true",
        "color.ui=always",
        "color.diff=always",
        "diff.algorithm=patience",
        "diff.indentHeuristic=false",
        "core.quotePath=true",
        "diff.context=9",
        "diff.interHunkContext=20",
        "core.bigFileThreshold=10",
        "diff.renames=copies",
        "diff.external=false",
    ],
)
def test_a_user_setting_does_not_change_the_diff_bytes(repo, setting):
    rng = change(repo)
    before = planned(repo, rng)
    user_config(setting)
    assert planned(repo, rng) == before


def test_git_diff_opts_in_the_environment_does_not_change_the_diff_bytes(repo, monkeypatch):
    rng = change(repo)
    before = planned(repo, rng)
    monkeypatch.setenv("GIT_DIFF_OPTS", "--unified=0")
    assert planned(repo, rng) == before


def test_separate_processes_with_different_config_make_the_same_bytes(repo, tmp_path):
    rng = change(repo)
    code = (
        "import sys; from deepseek_review import api; "
        f"p = api.plan_review(prompt='x', diff='{rng}', repo_root='.'); "
        "sys.stdout.write(p.prepared.prompt_sha256)"
    )
    other = tmp_path / "other-gitconfig"
    other.write_text(
        "[diff]\n\tnoprefix = true\n\talgorithm = histogram\n\tcontext = 1\n"
        '[diff "python"]\n\txfuncname = "^(.*v1.*)$"\n[color]\n\tui = always\n',
        encoding="utf-8",
    )
    envs = [
        dict(os.environ),
        {**os.environ, "GIT_CONFIG_GLOBAL": str(other), "GIT_DIFF_OPTS": "-u1"},
    ]
    runs = [
        subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True,
                       env=env)
        for env in envs
    ]  # fmt: skip
    hashes = {r.stdout for r in runs}
    assert len(hashes) == 1 and next(iter(hashes)).startswith("sha256:"), [r.stderr for r in runs]


def test_the_record_verifies_strict_after_the_repository_driver_config_changed(
    repo, cli, simulator
):
    rng = change(repo)
    git(repo, "config", "diff.python.xfuncname", "^(import.*)$")
    run = reviewed_diff(cli, simulator, rng)
    git(repo, "config", "diff.python.xfuncname", "^(    v[0-9]+.*)$")
    checked = cli("verify", "--strict", run.json()["segments"][0]["receipt_path"])
    assert checked.code == 0, checked.out + checked.err


def test_the_record_verifies_strict_after_the_user_driver_config_changed(repo, cli, simulator):
    rng = change(repo)
    run = reviewed_diff(cli, simulator, rng)
    user_config("diff.python.xfuncname=^(import.*)$")
    checked = cli("verify", "--strict", run.json()["segments"][0]["receipt_path"])
    assert checked.code == 0, checked.out + checked.err


def test_a_record_made_before_drivers_were_set_back_still_verifies(
    repo, cli, simulator, monkeypatch
):
    import deepseek_review.git.diff as gitdiff

    rng = change(repo)
    with monkeypatch.context() as m:  # as earlier versions made it: the driver as configured
        m.setattr(gitdiff, "driver_config", lambda root, changes: [])
        run = reviewed_diff(cli, simulator, rng)
        assert "@@ -12,6 +12,6 @@ def f(self):\n" in planned(repo, rng)[1]
    checked = cli("verify", "--strict", run.json()["segments"][0]["receipt_path"])
    assert checked.code == 0, checked.out + checked.err
