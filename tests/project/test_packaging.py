"""The wheel: built from this tree, installed (non-editable) into a fresh venv, run elsewhere.

The fresh venv gets the project's dependencies without any network: a ``.pth`` file puts the
current venv's site-packages at the *end* of its path (``.pth`` files inside that folder are
not processed, so the editable install of this source tree stays invisible), and the wheel
itself goes in with ``pip install --no-deps --no-index``.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.support.git import git
from tests.support.packaging import build_wheel

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_NAME = "deepseek-review-receipt.schema.json"


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    site_packages: Path
    work: Path
    """A folder outside the source tree with a small git repository to review."""

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def script(self) -> Path:
        return self.venv / "bin" / "deepseek-review"

    def run(self, *args: str | Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
        out = subprocess.run(
            [str(a) for a in args],
            cwd=self.work,
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": "/usr/bin:/bin", "HOME": str(self.work), "NO_COLOR": "1"},
        )
        if ok:
            assert out.returncode == 0, out.stderr
        return out


# One worker runs the module, so its module-scoped fixture is built once.
pytestmark = pytest.mark.xdist_group("packaging")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("packaging")
    wheel = build_wheel(base / "dist")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "zz_dependencies_from_dev_venv.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    work = base / "elsewhere"
    (work / "docs").mkdir(parents=True)
    (work / "docs" / "spec.md").write_text("# Spec\n\nThe mean of 2, 4 and 9 is 5.\n")
    git(work, "init", "-q")
    return Installed(wheel=wheel, venv=venv, site_packages=site, work=work)


# --------------------------------------------------------------------------- the wheel


def _wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


@pytest.mark.parametrize(
    "prompt",
    sorted(p.relative_to(ROOT / "prompts").as_posix() for p in ROOT.glob("prompts/**/*.md")),
)
def test_wheel_carries_each_prompt_byte_identical(installed, prompt):
    """Every version of every template: records name the one they were made with."""
    with zipfile.ZipFile(installed.wheel) as zf:
        assert (
            zf.read(f"deepseek_review/prompts/{prompt}") == (ROOT / "prompts" / prompt).read_bytes()
        )


def test_wheel_carries_the_dated_price_list(installed):
    with zipfile.ZipFile(installed.wheel) as zf:
        data = json.loads(zf.read("deepseek_review/data/prices.json"))
    assert data["checked"] and data["prices"]


def test_wheel_carries_the_schema_byte_identical(installed):
    with zipfile.ZipFile(installed.wheel) as zf:
        data = zf.read(f"deepseek_review/schemas/{SCHEMA_NAME}")
    assert data == (ROOT / "schemas" / SCHEMA_NAME).read_bytes()


#: sha256 of the frozen seed schema (shared/seeds/deepseek-review-receipt.schema.json): pinned
#: here so the check runs in every checkout, not only beside the shared seeds.
FROZEN_SCHEMA_SHA256 = "4429cf19d861534a9e45f37b81b5c65af04f06f4bd23123a08f561d832bf4f2c"


def test_shipped_schema_is_the_frozen_seed_unchanged():
    data = (ROOT / "schemas" / SCHEMA_NAME).read_bytes()
    assert hashlib.sha256(data).hexdigest() == FROZEN_SCHEMA_SHA256


def test_wheel_holds_the_package_and_no_tests_or_tooling(installed):
    names = _wheel_names(installed.wheel)
    assert "deepseek_review/py.typed" in names
    assert "deepseek_review/cli/__init__.py" in names
    assert "deepseek_review/testing/simulator/server.py" in names
    assert not [n for n in names if n.startswith(("tests/", ".venv/", "benchmarks/"))]


def test_wheel_declares_the_console_script(installed):
    with zipfile.ZipFile(installed.wheel) as zf:
        entry = next(n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt"))
        text = zf.read(entry).decode()
    assert "deepseek-review = deepseek_review.__main__:main" in text


# --------------------------------------------------------------------------- installed


def test_installed_package_is_imported_from_the_new_venv(installed):
    out = installed.run(
        installed.python, "-c", "import deepseek_review; print(deepseek_review.__file__)"
    )
    assert Path(out.stdout.strip()).is_relative_to(installed.site_packages)


def test_installed_resources_come_from_the_installed_package(installed):
    out = installed.run(
        installed.python,
        "-c",
        "from deepseek_review.util import resources as r; "
        "print(r.prompts_dir()); print(r.schema_path())",
    )
    prompts, schema = (Path(line) for line in out.stdout.splitlines())
    assert prompts == installed.site_packages / "deepseek_review" / "prompts"
    assert schema == installed.site_packages / "deepseek_review" / "schemas" / SCHEMA_NAME
    assert not prompts.is_relative_to(ROOT)


def test_installed_console_script_prints_its_version(installed):
    from deepseek_review._version import __version__

    out = installed.run(installed.script, "--version")
    assert out.stdout.strip() == f"deepseek-review {__version__}"


def test_installed_module_runs_with_python_dash_m(installed):
    out = installed.run(installed.python, "-m", "deepseek_review", "--help")
    assert "run" in out.stdout
    assert "Usage" in out.stdout


def test_installed_dry_run_uses_the_bundled_spec_review_template(installed):
    out = installed.run(
        installed.script,
        "run",
        "--dry-run",
        "--json",
        "--template",
        "spec-review",
        "-c",
        "docs/spec.md",
        "-p",
        "Check the mean.",
    )
    data = json.loads(out.stdout)
    assert data["template"] == "spec-review"
    assert [f["path"] for f in data["context_files"]] == ["docs/spec.md"]
    assert data["prompt_sha256"].startswith("sha256:")


def test_installed_dry_run_hash_matches_the_source_tree(installed, cli, monkeypatch):
    args = (
        "run",
        "--dry-run",
        "--json",
        "--template",
        "spec-review",
        "-c",
        "docs/spec.md",
        "-p",
        "Check the mean.",
    )
    there = json.loads(installed.run(installed.script, *args).stdout)["prompt_sha256"]
    monkeypatch.chdir(installed.work)
    here = cli(*args).json()["prompt_sha256"]
    assert there == here


def test_installed_run_writes_a_receipt_that_validates(installed, simulator):
    out = installed.run(
        installed.script,
        "run",
        "--json",
        "-c",
        "docs/spec.md",
        "-p",
        "Check the mean.",
        "--endpoint",
        simulator.base_url,
        "--output-dir",
        "installed-reviews",
    )
    seg = json.loads(out.stdout)["segments"][0]
    receipt = json.loads((installed.work / seg["receipt_path"]).read_text())
    schema = json.loads((ROOT / "schemas" / SCHEMA_NAME).read_text())
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    assert [e.message for e in validator.iter_errors(receipt)] == []


def test_installed_unknown_template_lists_the_bundled_choices(installed):
    out = installed.run(
        installed.script,
        "run",
        "--dry-run",
        "--template",
        "nope",
        "-c",
        "docs/spec.md",
        "-p",
        "x",
        ok=False,
    )
    assert out.returncode == 2
    for name in ("default", "spec-review", "code-review"):
        assert name in out.stderr
