"""Split reviews in tests: text larger than a model's window, and the split record beside
the reviews."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "sigma"]


def words(seed: int, nbytes: int) -> str:
    """Plain words (the simulator counts a word a token: fewer than bytes / 4), ``nbytes``
    long or a little more, different for each ``seed``."""
    lines = []
    size = 0
    i = seed
    while size < nbytes:
        line = " ".join(_WORDS[(i * 7 + k * 3) % len(_WORDS)] for k in range(8)) + f" {i}\n"
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines)


def write_texts(root: Path, paths: list[str], nbytes: int, *, seed: int = 0) -> list[str]:
    """``paths`` written under ``root``, each ``nbytes`` of :func:`words`; returns them."""
    for i, rel in enumerate(paths):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(words(seed + i, nbytes), encoding="utf-8")
    return paths


def split_records(folder: Path) -> list[dict[str, Any]]:
    """The split records in ``folder``, oldest name first."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.split.json"))]
