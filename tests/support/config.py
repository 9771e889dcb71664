"""Config files and option sources in tests: a dry run's effective settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def run_dry(cli: Any, *extra: str) -> Any:
    return cli("run", "-c", "docs/spec.md", "-p", "Check.", "--dry-run", "--json", *extra)


@pytest.fixture
def configured(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config file and an environment setting; neither is the built-in default."""
    (repo / ".deepseek-review.toml").write_text(
        'output_dir = "custom"\nmax_tokens = 7777\ncontinuation_max_tokens = 33\n'
    )
    monkeypatch.setenv("DEEPSEEK_REVIEW_MODEL", "m-from-env")
    monkeypatch.setenv("DEEPSEEK_REVIEW_MAX_CONTINUATIONS", "1")
    return repo
