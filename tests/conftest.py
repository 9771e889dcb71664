"""Shared pytest fixtures."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.simulator import Simulator
from tests.support.cli import CliResult
from tests.support.config import configured  # noqa: F401  (fixtures several files use)
from tests.support.git import git
from tests.support.secrets import offline  # noqa: F401  (fixtures several files use)
from tests.support.signing import alice, no_agent  # noqa: F401  (fixtures several files use)
from tests.support.stubs import Reply, Stub


@pytest.fixture
def simulator() -> Iterator[Simulator]:
    """A started simulator with the default config, stopped after the test."""
    sim = Simulator().start()
    try:
        yield sim
    finally:
        sim.stop()


@pytest.fixture
def make_simulator() -> Iterator[Callable[..., Simulator]]:
    """A factory of started simulators (config overrides as keywords); all stopped after."""
    made: list[Simulator] = []

    def make(**overrides: Any) -> Simulator:
        sim = Simulator(**overrides).start()
        made.append(sim)
        return sim

    try:
        yield make
    finally:
        for sim in made:
            sim.stop()


# --------------------------------------------------------------------------- isolation

_ENV_TO_CLEAR = (
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
)


@pytest.fixture(autouse=True)
def clean_environ(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No test sees the machine's Ollama settings, proxies or git configuration."""
    for name in _ENV_TO_CLEAR:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("DEEPSEEK_REVIEW_"):
            monkeypatch.delenv(name)
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.fixture(params=["openai", "ollama"])
def both_apis(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test once per chat API (``DEEPSEEK_REVIEW_API``): a suite marked
    ``pytestmark = pytest.mark.usefixtures("both_apis")`` runs over Ollama's native API too."""
    monkeypatch.setenv("DEEPSEEK_REVIEW_API", request.param)
    return str(request.param)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small git work tree (the current folder for the test) with a spec and some code."""
    root = tmp_path / "repo"
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
    git(root, "init", "-q")
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run the CLI in-process, like the console script, and capture its exit code and output."""
    from deepseek_review.cli import main

    def run(*args: str, stdin: str | None = None) -> CliResult:
        capsys.readouterr()
        old_stdin = sys.stdin
        if stdin is not None:
            sys.stdin = io.StringIO(stdin)
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.stdin = old_stdin
        captured = capsys.readouterr()
        return CliResult(code=code, out=captured.out, err=captured.err)

    return run


@pytest.fixture
def make_stub() -> Iterator[Callable[..., Stub]]:
    """A factory of started stub servers (``tests.support.stubs.Stub``); all stopped after."""
    made: list[Stub] = []

    def make(replies: list[Reply], **kw: Any) -> Stub:
        made.append(Stub(replies, **kw))
        return made[-1]

    yield make
    for stub in made:
        stub.stop()
