"""This source tree as others get it: a built wheel (and sdist), or a git repository holding a
commit of the working tree (uncommitted changes included, git's ignore rules applied)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def build(dist: Path, *kinds: str) -> None:
    """``python -m build`` of this tree into ``dist`` (``--wheel``, ``--sdist``; none: both)."""
    cmd = [sys.executable, "-m", "build", *kinds, "--outdir", str(dist), str(ROOT)]
    if importlib.util.find_spec("hatchling") is not None:
        cmd.insert(3, "--no-isolation")  # offline when the build backend is already here
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


def build_wheel(dist: Path) -> Path:
    build(dist, "--wheel")
    (wheel,) = dist.glob("deepseek_review-*.whl")
    return wheel


def snapshot(git_dir: Path) -> str:
    """This working tree committed into a new bare repository ``git_dir``: its commit id."""
    tree = ["git", f"--git-dir={git_dir}", f"--work-tree={ROOT}"]
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    subprocess.run([*tree, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*tree, *ident, "commit", "-qm", "snapshot"], check=True)
    rev = subprocess.run(
        ["git", f"--git-dir={git_dir}", "rev-parse", "HEAD"], check=True, capture_output=True
    )
    return rev.stdout.decode().strip()
