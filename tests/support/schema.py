"""The receipt and request-record schemas in tests: the valid corpus of receipts, their
single-field mutations, and the schema's errors for a record."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from deepseek_review.records.request_record import RECORD_SCHEMA, RECORD_VERSIONS
from deepseek_review.util.resources import record_schema_path


def valid_corpus() -> list[dict[str, Any]]:
    base = [load(p) for p in SEEDS + OURS]
    primary = next(r for r in base if "context_files" in r)
    cont = next(r for r in base if "previous_answer_path" in r)
    extra: list[dict[str, Any]] = []
    for field, value in [
        ("created_at", "2026-05-12T03:35:51Z"),
        ("created_at", "2026-05-12T03:35:51.123456+02:00"),
        ("created_at", "2026-05-12t03:35:51z"),
        ("endpoint", "http://[::1]:11434/v1/chat/completions"),
        ("endpoint", "https://ollama.com/v1/chat/completions?x=1#frag"),
        ("endpoint", "urn:example:endpoint"),
        ("model", "モデル"),
        ("usage", {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}),
        ("answer_path", "a.md"),
        ("answer_path", "deep/er/Ωx .md"),
    ]:
        for r in (primary, cont):
            extra.append({**r, field: value})
    extra.append({**primary, "context_files": ["a", "b/c.py", "d e.lean"]})
    extra.append({**cont, "message_keys": []})
    extra.append({k: v for k, v in cont.items() if k != "message_keys"})
    return base + extra


def mutations() -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for r in valid_corpus()[: len(SEEDS) + len(OURS)]:
        kind = "primary" if "context_files" in r else "continuation"
        for key in list(r):
            out.append((f"{kind} without {key}", {k: v for k, v in r.items() if k != key}))
        for key, values in BAD_VALUES.items():
            for value in values:
                out.append((f"{kind} {key}={value!r}", {**r, key: value}))
        out.append((f"{kind} with an extra key", {**r, "extra": 1}))
        other = (
            "ollama_deepseek_review_continuation_receipt_v1"
            if kind == "primary"
            else ("ollama_deepseek_review_receipt_v1")
        )
        out.append((f"{kind} claiming the other kind", {**r, "schema": other}))
    out += [("a list", []), ("a string", "receipt"), ("null", None), ("a number", 1), ("{}", {})]
    return out


@cache
def record_validator(version: str = RECORD_SCHEMA) -> Draft202012Validator:
    """The validator of the schema of request records of ``version`` (the newest by default),
    formats checked."""
    schema = json.loads(record_schema_path(version.rsplit("_", 1)[1]).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def validator_of(data: Any) -> Draft202012Validator:
    """The validator of the record version ``data`` says it is (the newest when it names none)."""
    version = data.get("record") if isinstance(data, dict) else None
    return record_validator(version if version in RECORD_VERSIONS else RECORD_SCHEMA)


def schema_errors(data: Any) -> list[str]:
    """What the schema of its record version says of ``data``, one line per error."""
    return [f"{e.json_path}: {e.message}" for e in validator_of(data).iter_errors(data)]


HERE = Path(__file__).parents[1]


SEEDS = sorted((HERE / "fixtures" / "research-stack").rglob("*.receipt.json"))


UNTOUCHED = HERE / "fixtures" / "tampered" / "untouched"


OURS = sorted(UNTOUCHED.rglob("*.receipt.json"))


H = "sha256:" + "ab" * 32


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


BAD_VALUES: dict[str, list[Any]] = {
    "schema": [None, "", "ollama_deepseek_review_receipt_v2", 1],
    "created_at": [None, "", "yesterday", "2026-05-12T03:35:51", "2026-13-12T03:35:51Z",
                   "2026-05-12 03:35:51+00:00", "2026-02-30T00:00:00Z", 20260512],
    "model": [None, "", 1, ["m"]],
    "endpoint": [None, "", "ollama.com/v1", "http://exa mple.com/", "://x", 3],
    "prompt_sha256": [None, "", H.upper(), H[:-1], H + "0", "sha512:" + "ab" * 32, H[7:], 5],
    "answer_sha256": [None, "sha256:" + "g" * 64, "SHA256:" + "ab" * 32, "sha256: " + "ab" * 32],
    "usage": [None, {}, {"prompt_tokens": 1, "completion_tokens": 1},
              {"prompt_tokens": -1, "completion_tokens": 1, "total_tokens": 0},
              {"prompt_tokens": 1.5, "completion_tokens": 1, "total_tokens": 2},
              {"prompt_tokens": "1", "completion_tokens": 1, "total_tokens": 2},
              {"prompt_tokens": True, "completion_tokens": 1, "total_tokens": 2},
              {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2, "x": 1}, [1, 2]],
    "context_files": [None, [], ["a", "a"], ["/etc/passwd"], [""], [1], "a.md", [["a"]]],
    "answer_path": [None, "", "/abs.md", "a.txt", "a.md.bak", "a.MD", 7, ["a.md"]],
    "previous_answer_path": [None, "", "/abs.md", "prev.txt", 1],
    "message_keys": [None, "role", ["role", "role"], [""], [1], {}],
}  # fmt: skip
