"""Context gathering in tests: a run against the simulator, a refusal naming what it refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from deepseek_review.testing.simulator import Simulator
from tests.support.cli import Cli, files_under, review


def write(root: Path, rel: str, text: str = "x = 1\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def assert_refused(r: Any, simulator: Simulator, repo: Path, *names: str, code: int = 3) -> None:
    """The run failed with ``code``, one stderr line naming each of ``names``, and no effect."""
    assert r.code == code, (r.code, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("deepseek-review: error: "), r.err
    for name in names:
        assert name in lines[0], (name, r.err)
    assert "Traceback" not in r.err
    assert r.out == ""
    assert simulator.chat_requests() == []
    assert files_under(repo / "reviews") == []


def run_against(cli: Cli, simulator: Simulator, *args: str) -> Any:
    """A review of the context ``args`` name (no ``--json``)."""
    return review(cli, simulator, *args, context=(), prompt="Review.", as_json=False)
