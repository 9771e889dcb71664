"""Running the CLI in tests: its result, a review of the repo fixture, what was written."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def use_key(monkeypatch: pytest.MonkeyPatch, key: str, var: str = "OLLAMA_API_KEY") -> None:
    """Export ``key`` in ``var`` and name ``var`` as the key to send, as an operator does for a
    server over plain http on loopback (the default variable goes over https only)."""
    monkeypatch.setenv(var, key)
    monkeypatch.setenv("DEEPSEEK_REVIEW_API_KEY_ENV", var)


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def files_under(folder: Path) -> list[str]:
    """Every file below ``folder`` (relative), to assert that nothing was written."""
    if not folder.exists():
        return []
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def review(
    cli: Callable[..., CliResult],
    server: Any,
    *extra: str,
    context: tuple[str, ...] = ("docs/spec.md",),
    prompt: str = "Check the mean.",
    as_json: bool = True,
) -> CliResult:
    """``run`` on the repo fixture's spec (or ``context``) against ``server`` (a simulator or
    stub, or its URL), retries 10 ms apart, ``--json`` unless told otherwise: the result, for
    the test to check."""
    url = server if isinstance(server, str) else server.base_url
    args = ["run", *(a for c in context for a in ("-c", c)), "-p", prompt, "--endpoint", url]
    return cli(*args, "--retry-wait", "0.01", *(["--json"] if as_json else []), *extra)


Cli = Callable[..., CliResult]
"""The ``cli`` fixture's type: runs the CLI in-process."""


def verify_tampered_split(
    cli: Callable[..., CliResult], root: Path, tamper: Callable[[dict[str, Any]], None]
) -> tuple[CliResult, str]:
    """Change the one split record in ``root/reviews`` with ``tamper``, then verify the
    folder: the outcome, and the record's name."""
    (path,) = sorted((root / "reviews").glob("*.split.json"))
    data = json.loads(path.read_text(encoding="utf-8"))
    tamper(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    return cli("verify", "reviews"), path.name
