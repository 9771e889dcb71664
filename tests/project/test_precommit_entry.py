"""The review hook's entry script itself (``.pre-commit-hooks.yaml``), run by ``sh`` with a
stand-in ``deepseek-review`` on PATH that prints what ``run --json`` would and records what
``findings`` is asked: what the gate reads for each kind of run. The real ``pre-commit`` runs
the hook end to end in ``test_precommit_hooks.py`` (slow)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def entry() -> str:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = (h for h in hooks if h["id"] == "deepseek-review")
    text = hook["entry"]
    assert isinstance(text, str) and text.startswith("sh -c '")
    return text


def run_entry(
    tmp_path: Path, printed: dict[str, Any]
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """The entry run as pre-commit runs it, ``run --json`` printing ``printed``; what
    ``findings`` was asked (one line per call)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "run.json").write_text(json.dumps(printed), encoding="utf-8")
    stub = bin_dir / "deepseek-review"
    stub.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = run ]; then cat "{tmp_path / "run.json"}"; exit 0; fi\n'
        f'echo "$*" >> "{tmp_path / "findings.log"}"\n',
        encoding="utf-8",
    )
    stub.chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PRE_COMMIT_FROM_REF", None)
    env.pop("PRE_COMMIT_TO_REF", None)
    script = entry()[len("sh -c '") :].rsplit("' deepseek-review", 1)[0]
    done = subprocess.run(
        ["sh", "-c", script, "deepseek-review"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    log = tmp_path / "findings.log"
    return done, log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_the_gate_reads_the_first_answer_of_an_ordinary_review(tmp_path: Path) -> None:
    printed = {"segments": [{"answer_path": "reviews/a.md"}, {"answer_path": "reviews/a-2.md"}]}
    done, calls = run_entry(tmp_path, printed)
    assert done.returncode == 0, done.stderr
    assert calls == ["findings --format markdown --fail-on major -- reviews/a.md"]


def test_the_gate_reads_every_part_and_the_synthesis_of_a_split_review(tmp_path: Path) -> None:
    parts = [{"answers": ["reviews/p1.md"]}, {"answers": ["reviews/p2.md", "reviews/p2-2.md"]},
             {"answers": ["reviews/synthesis.md"]}]  # fmt: skip
    done, calls = run_entry(tmp_path, {"split": True, "parts": parts})
    assert done.returncode == 0, done.stderr
    assert calls == [
        "findings --format markdown --fail-on major -- reviews/p1.md reviews/p2.md "
        "reviews/p2-2.md reviews/synthesis.md"
    ]


def test_a_dry_run_in_the_hooks_args_shows_the_plan_and_gates_nothing(tmp_path: Path) -> None:
    plan = {"dry_run": True, "split": True, "parts": [{"number": 1, "files": []}]}
    done, calls = run_entry(tmp_path, plan)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr == "deepseek-review hook: a dry run sends nothing: no findings to gate\n"
    assert json.loads(done.stdout) == plan
    assert calls == []
