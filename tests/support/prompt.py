"""Prompts bigger than the context window, for the truncation and fit tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.cli import review


def big_spec(repo: Path) -> None:
    """About 6,000 estimated tokens of ordinary prose."""
    line = "The mean of the three values is computed over the whole window, as stated.\n"
    (repo / "docs" / "big.md").write_text(line * 300, encoding="utf-8")


def run_big(cli: Any, sim: Any, *extra: str) -> Any:
    """A review of the big spec (written by ``big_spec``), files up to 1 MB allowed."""
    return review(
        cli,
        sim,
        "--max-file-bytes",
        "1000000",
        *extra,
        context=("docs/big.md",),
        prompt="Check it.",
    )
