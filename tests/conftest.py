"""Shared pytest fixtures."""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator
from tests.support.cli import CliResult
from tests.support.config import configured  # noqa: F401  (fixtures several files use)
from tests.support.reviews import ReadyReview, isolated_environ, make_ready_review, write_repo
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


@pytest.fixture(autouse=True)
def clean_environ(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No test sees the machine's Ollama settings, proxies or git configuration."""
    env = isolated_environ(os.environ, tmp_path_factory.mktemp("home"))
    for name in set(os.environ) - set(env):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(params=["openai", "ollama"])
def both_apis(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test once per chat API (``DEEPSEEK_REVIEW_API``): a test marked
    ``pytest.mark.usefixtures("both_apis")`` runs over Ollama's native API too. Only for tests
    whose behaviour differs by API (what is sent, how the answer is read, its records)."""
    monkeypatch.setenv("DEEPSEEK_REVIEW_API", request.param)
    return str(request.param)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small git work tree (the current folder for the test) with a spec and some code."""
    root = write_repo(tmp_path / "repo")
    monkeypatch.chdir(root)
    return root


@pytest.fixture(scope="session")
def ready_reviews(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ReadyReview]:
    """A review cut off twice, made once per test run (per worker) for each chat API asked."""
    made: dict[str, ReadyReview] = {}

    def ready(api: str) -> ReadyReview:
        if api not in made:
            made[api] = make_ready_review(tmp_path_factory.mktemp(f"ready-{api}"), api)
        return made[api]

    return ready


@pytest.fixture
def reviewed(repo: Path, request: pytest.FixtureRequest) -> list[str]:
    """The repo fixture with a review cut off twice in its reviews/ folder (over the API of
    ``both_apis`` where the test uses it, else /v1): the receipts, in chain order. The review
    is a copy of one made once per run: verify, show and findings never talk to a server."""
    api = request.getfixturevalue("both_apis") if "both_apis" in request.fixturenames else "openai"
    ready = request.getfixturevalue("ready_reviews")(api)
    shutil.copytree(ready.reviews, repo / "reviews", symlinks=True)
    return list(ready.receipts)


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
