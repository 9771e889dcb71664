"""The pre-commit hooks of ``.pre-commit-hooks.yaml``, run by the real ``pre-commit try-repo``
on a scratch repository, as another project would use them.

``try-repo`` installs this repository into a hook environment (``language: python``: pip
builds it and fetches typer, httpx, ... from the package index). A snapshot of the working
tree is committed once per module, so every test uses the same revision and the environment
is built once (in a module-wide ``PRE_COMMIT_HOME``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from deepseek_review.testing.simulator import Simulator
from tests.support.git import commit, git
from tests.support.packaging import snapshot
from tests.support.reviews import write_repo
from tests.support.split import words

ROOT = Path(__file__).resolve().parents[2]
PRE_COMMIT = Path(sys.executable).parent / "pre-commit"

# One worker runs the module: the hook environment is built once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("pre-commit")]


def hooks() -> dict[str, dict[str, object]]:
    data = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return {h["id"]: h for h in data}


@dataclass(frozen=True)
class HookRepo:
    """A commit of this working tree (what ``try-repo`` installs) and the pre-commit cache."""

    path: Path
    rev: str
    home: Path

    def try_repo(
        self, work: Path, hook: str, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """``pre-commit try-repo`` of ``hook`` in ``work`` (its exit code and output)."""
        return self.pre_commit(
            work, "try-repo", str(self.path), hook, "--ref", self.rev, *args, env=env
        )

    def pre_commit(
        self, work: Path, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PRE_COMMIT), *args],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PRE_COMMIT_HOME": str(self.home), **(env or {})},
        )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> HookRepo:
    """This working tree as git sees it (its ignore rules apply: no .venv), committed into a
    repository of its own, so uncommitted changes are tested too."""
    base = tmp_path_factory.mktemp("hook-repo")
    git_dir = base / "snapshot.git"
    return HookRepo(git_dir, snapshot(git_dir), base / "pre-commit-home")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A scratch repository with its first commit."""
    root = write_repo(tmp_path / "work")
    commit(root, "base", {})
    return root


def review_in(work: Path, simulator: Simulator) -> Path:
    """A review of the scratch repository's spec (its answer file)."""
    out = subprocess.run(
        [
            *(sys.executable, "-m", "deepseek_review", "run"),
            *("-c", "docs/spec.md", "-p", "Check the mean.", "--endpoint", simulator.base_url),
        ],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return work / out.stdout.splitlines()[0]


def test_review_hook_never_runs_on_every_commit() -> None:
    hook = hooks()["deepseek-review"]
    assert hook["stages"] == ["manual", "pre-push"]
    assert (hook["language"], hook["pass_filenames"]) == ("python", False)


def test_verify_hook_passes_on_good_reviews(hook_repo, work, simulator) -> None:
    review_in(work, simulator)
    result = hook_repo.try_repo(work, "deepseek-review-verify", "--all-files")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout


def test_verify_hook_fails_on_a_tampered_answer(hook_repo, work, simulator) -> None:
    answer = review_in(work, simulator)
    answer.write_text(answer.read_text(encoding="utf-8") + "Approved.\n", encoding="utf-8")
    result = hook_repo.try_repo(work, "deepseek-review-verify", "--all-files")
    assert result.returncode == 1
    assert "Failed" in result.stdout
    assert answer.name in result.stdout


def test_review_hook_reviews_the_staged_change(hook_repo, work, simulator) -> None:
    (work / "src" / "pkg" / "mean.py").write_text(
        "def mean(xs):\n    return sum(xs) // len(xs)\n", encoding="utf-8"
    )
    git(work, "add", "src/pkg/mean.py")
    env = {"DEEPSEEK_REVIEW_ENDPOINT": simulator.base_url}
    result = hook_repo.try_repo(work, "deepseek-review", "--hook-stage", "manual", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    (receipt,) = (work / "reviews").glob("pre-commit_*.receipt.json")
    assert "src/pkg/mean.py" in (work / "reviews").joinpath(
        receipt.name.replace(".receipt.json", ".request.json")
    ).read_text(encoding="utf-8")
    assert "deepseek-review findings" in result.stdout


def test_review_hook_fails_on_a_finding_at_the_threshold(hook_repo, work, simulator) -> None:
    (work / "src" / "pkg" / "mean.py").write_text("def mean(xs):\n    return 0\n", "utf-8")
    git(work, "add", "src/pkg/mean.py")
    # Context files make the simulator answer with one finding (its severity by hash): at the
    # lowest threshold it fails the hook, whatever that severity.
    env = {"DEEPSEEK_REVIEW_ENDPOINT": simulator.base_url, "DEEPSEEK_REVIEW_HOOK_FAIL_ON": "nit"}
    # The hook's args are added to `run`: a project's own config is how they are given.
    config = {
        "repos": [
            {
                "repo": str(hook_repo.path),
                "rev": hook_repo.rev,
                "hooks": [{"id": "deepseek-review", "args": ["-c", "docs/spec.md"]}],
            }
        ]
    }
    (work / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    git(work, "add", ".pre-commit-config.yaml")
    result = hook_repo.pre_commit(work, "run", "deepseek-review", "--hook-stage", "manual", env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Simulated finding on the first line" in result.stdout
    assert "exit code: 13" in result.stdout


def test_review_hook_on_push_reviews_the_pushed_commits(hook_repo, work, simulator) -> None:
    base = git(work, "rev-parse", "HEAD").strip()
    head = commit(work, "pushed", {"src/pkg/mean.py": "def mean(xs):\n    return 1\n"})
    env = {"DEEPSEEK_REVIEW_ENDPOINT": simulator.base_url}
    result = hook_repo.try_repo(
        work, "deepseek-review", "--hook-stage", "pre-push", "--from-ref", base, "--to-ref", head,
        env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (record,) = (work / "reviews").glob("pre-commit_*.request.json")
    pins = record.read_text(encoding="utf-8")
    assert base in pins and head in pins


def test_review_hook_with_split_gates_every_part_and_the_synthesis(
    hook_repo, work, make_simulator
) -> None:
    """A change larger than the window, reviewed in parts: the finding sits in a later part
    (the simulator flags line 1 of the first context file of a part with text there; the
    first files start with an empty line), so gating part 1 alone would let it pass."""
    docs: dict[str, str | bytes | None] = {
        f"docs/a{i}.md": "\n" + words(i, 6_000) for i in range(4)
    }
    commit(work, "docs", {**docs, "docs/z.md": words(9, 6_000)})
    (work / "src" / "pkg" / "mean.py").write_text("def mean(xs):\n    return 0\n", "utf-8")
    git(work, "add", "src/pkg/mean.py")
    small = make_simulator(context_window=4096, context_overflow="refuse", answer_words=40)
    env = {"DEEPSEEK_REVIEW_ENDPOINT": small.base_url, "DEEPSEEK_REVIEW_CONTEXT_WINDOW": "4096",
           "DEEPSEEK_REVIEW_MAX_TOKENS": "512", "DEEPSEEK_REVIEW_HOOK_FAIL_ON": "nit"}  # fmt: skip
    config = {
        "repos": [
            {
                "repo": str(hook_repo.path),
                "rev": hook_repo.rev,
                "hooks": [{"id": "deepseek-review", "args": ["--split", "-c", "docs/"]}],
            }
        ]
    }
    (work / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    git(work, "add", ".pre-commit-config.yaml")
    result = hook_repo.pre_commit(work, "run", "deepseek-review", "--hook-stage", "manual", env=env)
    (record,) = (work / "reviews").glob("*.split.json")
    assert len(json.loads(record.read_text(encoding="utf-8"))["parts"]) >= 2
    assert result.returncode == 1, result.stdout + result.stderr
    assert "docs/z.md" in result.stdout
    assert "exit code: 13" in result.stdout
