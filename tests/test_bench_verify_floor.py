"""The verify rows' plain verify inside the stack (benchmarks/floor_verify.py) must do the
work it is credited with: it passes an intact corpus, with or without forked workers, and
fails one whose answer or context file changed, so it cannot pass for fast by skipping."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.bench_verify import HERE, make_corpus, plain_details
from benchmarks.common import Command


def plain(root: Path, workers: int = 0) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, str(HERE / "floor_verify.py"), str(root), str(root / "reviews")]
    return subprocess.run([*argv, "--workers", str(workers)], capture_output=True, text=True)


# One worker runs the module, so its module-scoped fixture is built once.
pytestmark = pytest.mark.xdist_group("verify_floor")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    root = (tmp_path_factory.mktemp("floor") / "repo").resolve()
    return root, make_corpus(root, 12)


@pytest.mark.parametrize("workers", [0, 2])
def test_plain_verify_passes_every_intact_receipt(corpus: tuple[Path, int], workers: int) -> None:
    root, made = corpus
    done = plain(root, workers)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == f"{made} receipts, 0 failed\n"


def test_plain_verify_fails_an_altered_answer(tmp_path: Path) -> None:
    root = (tmp_path / "repo").resolve()
    make_corpus(root, 3)
    answer = sorted((root / "reviews").glob("*.md"))[0]
    answer.write_bytes(answer.read_bytes() + b"x")
    done = plain(root)
    assert done.returncode == 1
    assert done.stdout.endswith("1 failed\n")


def test_plain_verify_fails_when_a_context_file_changed(tmp_path: Path) -> None:
    root = (tmp_path / "repo").resolve()
    make_corpus(root, 3)
    for f in (root / "src").rglob("*.py"):
        f.write_text(f.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    done = plain(root)
    assert done.returncode != 0


def test_plain_verify_is_timed_against_ours_and_the_baseline(corpus: tuple[Path, int]) -> None:
    root, _ = corpus
    ours = Command(("true",))
    details, commands = plain_details(root, ours, Command(("true",)), workers=0, rounds=1)
    assert commands == [f"python {HERE}/floor_verify.py $REPO $REPO/reviews --workers 0"]
    assert details[0][0].startswith("ours vs a plain verify inside the stack")
    assert details[1][0] == "that plain verify vs sha256sum"
