"""Install and run without cloning: the built wheel and sdist pass ``twine check``; the wheel,
installed into a fresh venv with its dependencies from the package index, runs ``make demo``'s
review; ``uvx --from`` and ``pipx run --spec`` run the tool from the wheel and from a git URL
(a ``git+file://`` URL of this tree's commit: the form the README shows for a forge's URL).

Slow (each builds or installs from the package index), and needs the index reachable, as
``make venv`` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from deepseek_review._version import __version__
from deepseek_review.testing.simulator import Simulator
from tests.support.git import commit
from tests.support.packaging import ROOT, build, snapshot
from tests.support.reviews import write_repo

BIN = Path(sys.executable).parent
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("install-ways")]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("dist")
    build(folder)
    return folder


def wheel_of(dist: Path) -> Path:
    (wheel,) = dist.glob("deepseek_review-*.whl")
    return wheel


def tool_env(tmp: Path) -> dict[str, str]:
    """pipx's and uv's homes and caches in ``tmp``: nothing of the machine's is used."""
    return {
        **os.environ,
        "PIPX_HOME": str(tmp / "pipx"),
        "PIPX_BIN_DIR": str(tmp / "pipx" / "bin"),
        "UV_CACHE_DIR": str(tmp / "uv-cache"),
        "UV_TOOL_DIR": str(tmp / "uv-tools"),
    }


def scratch(tmp: Path) -> Path:
    work = write_repo(tmp / "work")
    commit(work, "base", {})
    return work


def run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


def test_twine_check_passes_on_the_wheel_and_the_sdist(dist):
    out = run([BIN / "twine", "check", "--strict", *sorted(dist.iterdir())], dist)
    assert out.count("PASSED") == 2


def test_wheel_carries_the_standards_and_nothing_of_the_tests(dist):
    with zipfile.ZipFile(wheel_of(dist)) as zf:
        names = set(zf.namelist())
    shipped = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "deepseek_review" / "standards").rglob("*")
        if p.is_file()
    }
    assert shipped and shipped <= names
    man = f"deepseek_review-{__version__}.data/data/share/man/man1/deepseek-review.1"
    assert man in names
    assert not [n for n in names if n.startswith("tests/") or "/tests/" in n]


def test_wheel_in_a_fresh_venv_runs_the_demo(dist, tmp_path):
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv], tmp_path)
    run([venv / "bin" / "pip", "install", "--quiet", wheel_of(dist)], tmp_path)
    # scripts/demo.py runs the deepseek-review beside the Python that runs it: the installed one.
    out = run([venv / "bin" / "python", ROOT / "scripts" / "demo.py", tmp_path / "demo"], tmp_path)
    assert "verify" in out.lower()
    assert list((tmp_path / "demo").rglob("*.receipt.json"))


def review_with(tmp: Path, *launcher: str | Path) -> Path:
    """``run`` of a scratch repository's spec through ``launcher`` (uvx, pipx run) against
    the simulator: the receipt written."""
    work, sim = scratch(tmp), Simulator().start()
    args = ("run", "--json", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", sim.base_url)
    try:
        out = run([*launcher, "deepseek-review", *args], work, tool_env(tmp))
    finally:
        sim.stop()
    receipt: str = json.loads(out)["segments"][0]["receipt_path"]
    return work / receipt


def test_uvx_from_the_wheel_runs_a_review(dist, tmp_path):
    assert review_with(tmp_path, BIN / "uvx", "--from", wheel_of(dist)).is_file()


def test_pipx_run_from_a_git_url_runs_a_review(tmp_path):
    rev = snapshot(tmp_path / "deepseek-review.git")
    spec = f"git+file://{tmp_path / 'deepseek-review.git'}@{rev}"
    assert review_with(tmp_path, BIN / "pipx", "run", "--spec", spec).is_file()
