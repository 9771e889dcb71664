"""Several simulators as the servers of one batch (``--endpoint`` given once for each)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from deepseek_review.testing.simulator import Simulator


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
