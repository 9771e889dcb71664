"""Real git repositories for the tests: run git, commit files, and see which git commands
the tool started."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` (tests build real repositories, never mock git)."""
    out = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return out.stdout


def commit(repo: Path, message: str, files: dict[str, str | bytes | None]) -> str:
    """Write (or delete, for None) ``files`` and commit them; the new commit's id."""
    for rel, content in files.items():
        path = repo / rel
        if content is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def base_commit(repo: Path) -> str:
    """The repo fixture's files as the first commit, tagged ``v1``."""
    oid = commit(repo, "base", {})
    git(repo, "tag", "v1")
    return oid


def dry(cli: Any, *args: str) -> Any:
    result = cli("run", "-p", "Review the change.", "--dry-run", "--json", *args)
    assert result.code == 0, result.err
    return result.json()


def user_text(repo: Path, *args: str) -> str:
    """The user message a ``--dry-run`` would send (built by the library)."""
    from deepseek_review import api
    from deepseek_review.reviewing.plan import ReviewPlan

    plan = api.plan_review(prompt="Review the change.", repo_root=str(repo), **_kw(args))
    assert isinstance(plan, ReviewPlan)
    return plan.texts[-1]


def logged_git(tmp_path: Path) -> tuple[Path, Path]:
    """A folder holding a ``git`` that logs its arguments, and the log."""
    real = shutil.which("git")
    assert real is not None
    folder, log = tmp_path / "logbin", tmp_path / "git.log"
    folder.mkdir()
    script = folder / "git"
    script.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return folder, log


def git_calls(cwd: Path, tmp_path: Path, *args: str) -> list[str]:
    """The git commands ``deepseek-review ARGS`` started in its own process, in order."""
    folder, log = logged_git(tmp_path)
    run_in_process(
        cwd, *args, env={**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    )
    calls = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return [c.split(" safe.bareRepository=explicit ", 1)[-1] for c in calls]


def commit_all(root: Path) -> None:
    """Everything in the work tree committed: ``HEAD`` holds each file's blob."""
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")


def _kw(args: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        key = args[i].lstrip("-").replace("-", "_")
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            out[key] = args[i + 1]
            i += 2
        else:
            out[key] = True
            i += 1
    return out


def run_in_process(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """What ``deepseek-review ARGS`` prints, run in its own process (it must succeed)."""
    proc = subprocess.run(
        [sys.executable, "-m", "deepseek_review", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


NEW_SPEC = "# Spec\n\nThe mean of 2, 4 and 9 is 5. Always.\n"


def commit_change(repo: Path, message: str, *paths: str) -> str:
    """Commit ``paths`` (none: everything), as the pull request's commit."""
    git(repo, "add", *(paths or ("-A",)))
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()
