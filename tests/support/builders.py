"""Receipts built by hand, for tests that need one the tool would never write.

``sha`` is computed here, independently of the package's own hashing, so the tests do not
check the code with itself.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def primary_receipt(answer_path: str, answer: bytes, context: list[str]) -> dict[str, Any]:
    return {
        "schema": "ollama_deepseek_review_receipt_v1",
        "created_at": "2026-05-12T03:35:51+00:00",
        "model": "deepseek-v4-flash",
        "endpoint": "http://127.0.0.1:11434/v1/chat/completions",
        "prompt_sha256": "sha256:" + "0" * 64,
        "answer_sha256": sha(answer),
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        "context_files": context,
        "answer_path": answer_path,
    }


def continuation_receipt(answer_path: str, answer: bytes, previous: str) -> dict[str, Any]:
    return {
        "schema": "ollama_deepseek_review_continuation_receipt_v1",
        "created_at": "2026-05-12T03:35:52+00:00",
        "model": "deepseek-v4-flash",
        "endpoint": "http://127.0.0.1:11434/v1/chat/completions",
        "prompt_sha256": "sha256:" + "0" * 64,
        "answer_sha256": sha(answer),
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        "previous_answer_path": previous,
        "answer_path": answer_path,
    }


def write_receipt(root: Path, rel: str, data: dict[str, Any]) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
