"""Batches in tests: a manifest of entries, `batch` run through the CLI, its statuses,
and a batch started as its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deepseek_review.testing.simulator import Simulator


def manifest(
    repo: Path,
    topics: list[str],
    *,
    name: str = "reviews.toml",
    defaults: dict[str, Any] | None = None,
    per_entry: dict[str, dict[str, Any]] | None = None,
) -> Path:
    lines = []
    if defaults:
        lines.append("[defaults]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in defaults.items()]
        lines.append("")
    for t in topics:
        entry = {"prompt": f"Check {t}.", "context": "docs/spec.md", **(per_entry or {}).get(t, {})}
        lines += ["[[review]]", f'topic = "{t}"']
        lines += [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
        lines.append("")
    path = repo / name
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def batch(cli: Any, sim: Simulator, *args: str) -> Any:
    return cli(
        "batch",
        "reviews.toml",
        "--endpoint",
        sim.base_url,
        "--retry-wait",
        "0.01",
        "--json",
        *args,
    )


def statuses(result: Any) -> dict[str, str]:
    return {e["topic"]: e["status"] for e in result.json()["entries"]}


def spawn_batch(repo: Path, url: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "deepseek_review", "batch", "reviews.toml", "--endpoint", url,
         "--jobs", "2", "--report", "report.json", *extra],
        cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
