"""Several simulators as the servers of one batch (``--endpoint`` given once for each)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from deepseek_review.testing.simulator import Simulator
from tests.support.git import commit_all


def start_servers(
    make_simulator: Callable[..., Simulator], n: int, **config: Any
) -> list[Simulator]:
    """``n`` started simulators with the same knobs (capacity, latency, die_after, ...)."""
    return [make_simulator(**config) for _ in range(n)]


def endpoint_flags(servers: Sequence[Simulator]) -> list[str]:
    """``--endpoint URL`` once per server."""
    return [word for s in servers for word in ("--endpoint", s.base_url)]


def served_by(repo: Path, report: dict[str, Any]) -> Counter[str]:
    """How many receipts each endpoint (as the receipts name it) wrote, over a batch report."""
    return Counter(
        json.loads((repo / path).read_text())["endpoint"]
        for entry in report["entries"]
        for path in entry["receipt_paths"]
    )


def split_files(repo: Path, n: int) -> None:
    """``n`` committed files of ~1,500 words under ``docs``: with a 4,096-token window each
    part of a split review holds one or two of them."""
    for i in range(n):
        lines = (" ".join(f"w{i}x{k}" for k in range(j, j + 10)) for j in range(0, 1500, 10))
        (repo / "docs" / f"part{i}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    commit_all(repo)
