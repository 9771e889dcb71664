"""Reviews made once per test run, for the tests that only read them (verify, show, findings).

A review is the one thing these tests cannot build by hand without checking the code with
itself, and the slow part of each: so it is made once per chat API and per test run (per
xdist worker), in a folder of its own, by the real CLI in its own process against the real
simulator. A test copies its ``reviews/`` folder into its own repo fixture, which holds the
same files, and may then change the copy as it likes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from deepseek_review.testing.simulator import Simulator

#: What no test may inherit from the machine: its Ollama settings and proxies (the tool's
#: own DEEPSEEK_REVIEW_* settings go too).
ENV_TO_CLEAR = (
    "CI",
    "OLLAMA_HOST",
    "OLLAMA_API_KEY",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "XDG_CACHE_HOME",
)

#: A review cut off twice: a primary and two continuations, the last one finishing the
#: answer (40 + 40 + 30 words of a 110-word answer).
CUT_TWICE = ("--max-tokens", "40", "--max-continuations", "2")
CUT_TWICE_WORDS = 110


def isolated_environ(environ: Mapping[str, str], home: Path) -> dict[str, str]:
    """``environ`` without the machine's settings, with ``home`` as HOME and an empty git
    configuration there."""
    env = {
        k: v
        for k, v in environ.items()
        if k not in ENV_TO_CLEAR and not k.startswith("DEEPSEEK_REVIEW_")
    }
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        NO_COLOR="1",
    )
    return env


def write_repo(root: Path) -> Path:
    """The repo fixture's files in a new git work tree at ``root``: a spec and some code."""
    (root / "docs").mkdir(parents=True)
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "docs" / "spec.md").write_text(
        "# Spec\n\nThe mean of 2, 4 and 9 is 5.\n\n```python\nprint(5)\n```\n", encoding="utf-8"
    )
    (root / "src" / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "src" / "pkg" / "mean.py").write_text(
        "def mean(xs):\n    return sum(xs) / len(xs)\n", encoding="utf-8"
    )
    (root / ".gitignore").write_text("*.log\nbuild/\n", encoding="utf-8")
    subprocess.run(
        ["git", "init", "-q"], cwd=root, check=True, env=isolated_environ(os.environ, root.parent)
    )
    return root


@dataclass(frozen=True)
class ReadyReview:
    """A review of the repo fixture's spec made once: its folder and receipts in chain order."""

    root: Path
    receipts: tuple[str, ...]

    @property
    def reviews(self) -> Path:
        return self.root / "reviews"


def make_ready_review(folder: Path, api: str) -> ReadyReview:
    """``run`` cut off twice over ``api`` (``openai`` or ``ollama``) in a new repo in
    ``folder``, as a user runs it."""
    root = write_repo(folder / "repo")
    home = folder / "home"
    home.mkdir()
    env = {**isolated_environ(os.environ, home), "DEEPSEEK_REVIEW_API": api}
    sim = Simulator(answer_words=CUT_TWICE_WORDS).start()
    try:
        args = ["run", "-c", "docs/spec.md", "-p", "Check the mean.", "--endpoint", sim.base_url]
        out = subprocess.run(
            [sys.executable, "-m", "deepseek_review", *args, *CUT_TWICE, "--json"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        sim.stop()
    assert out.returncode == 0, out.stderr
    segments = json.loads(out.stdout)["segments"]
    return ReadyReview(root, tuple(s["receipt_path"] for s in segments))
