"""Where the bundled ``prompts/`` and ``schemas/`` are, installed or in a source checkout.

The wheel carries both folders inside the package (``deepseek_review/prompts``); a source
checkout or an editable install has them at the repository's top level, which is the
project's contract (issue: "top level prompts/ and schemas/").
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent


@cache
def resource_dir(name: str) -> Path:
    """The folder ``name`` ("prompts" or "schemas"), wherever this copy keeps it."""
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"deepseek-review is missing its bundled {name}/ folder")


def prompts_dir() -> Path:
    return resource_dir("prompts")


def schema_path() -> Path:
    return resource_dir("schemas") / "deepseek-review-receipt.schema.json"


def record_schema_path(version: str = "v3") -> Path:
    """The JSON Schema of request records of ``version`` (one file per version)."""
    return resource_dir("schemas") / f"deepseek-review-request-record-{version}.schema.json"
