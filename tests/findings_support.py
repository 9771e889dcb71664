"""Shared by the findings tests: validators for the standards, and reviews with answers the
test chooses (a scripted server on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from deepseek_review.finding.model import Finding
from tests.stubs import Reply

STANDARDS = Path(__file__).parent.parent / "deepseek_review" / "standards"


def _load(name: str) -> dict[str, Any]:
    data = json.loads((STANDARDS / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def rdf_validator(name: str) -> Draft4Validator:
    """A validator for one of reviewdog's schemas, the others registered by file name (they
    may refer to each other)."""
    registry: Registry[Any] = Registry().with_resources(
        (p.name, Resource.from_contents(_load(f"reviewdog-rdf/{p.name}"), DRAFT4))
        for p in (STANDARDS / "reviewdog-rdf").glob("*.json")
    )
    return Draft4Validator(_load(f"reviewdog-rdf/{name}"), registry=registry)


def assert_valid_sarif(log: Any) -> None:
    errors = list(Draft4Validator(_load("sarif-schema-2.1.0.json")).iter_errors(log))
    assert not errors, [e.message for e in errors[:3]]


def assert_valid_rdjson(doc: Any) -> None:
    errors = list(rdf_validator("DiagnosticResult.json").iter_errors(doc))
    assert not errors, [e.message for e in errors[:3]]


def assert_valid_rdjsonl(text: str) -> None:
    validator = rdf_validator("Diagnostic.json")
    lines = text.splitlines()
    assert lines
    for line in lines:
        errors = list(validator.iter_errors(json.loads(line)))
        assert not errors, [e.message for e in errors[:3]]


def assert_valid_findings_json(doc: Any, version: int = 2) -> None:
    """Against this tool's own export schema (``schemas/deepseek-review-findings-v<N>``)."""
    from jsonschema import Draft202012Validator

    from deepseek_review.util.resources import resource_dir

    path = resource_dir("schemas") / f"deepseek-review-findings-v{version}.schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    errors = list(Draft202012Validator(schema).iter_errors(doc))
    assert not errors, [e.message for e in errors[:3]]


def finding(**over: Any) -> Finding:
    item: dict[str, Any] = {
        "path": "src/pkg/mean.py",
        "start_line": 2,
        "end_line": 2,
        "severity": "major",
        "category": "correctness",
        "title": "Division by zero on an empty list",
        "message": "len(xs) is 0 for []: raise a ValueError first.",
    }
    return Finding.from_json({**item, **over})


def block(*items: dict[str, Any]) -> str:
    return "```json\n" + json.dumps({"findings": list(items)}, indent=2) + "\n```\n"


def item(**over: Any) -> dict[str, Any]:
    return finding(**over).to_json()


def chat_reply(text: str, finish: str = "stop") -> Reply:
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": "deepseek-v4-flash",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text},
             "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 10, "total_tokens": 1010},
    }  # fmt: skip
    return Reply(body=json.dumps(body).encode())


def review_answering(
    cli: Callable[..., Any], make_stub: Callable[..., Any], segments: list[str], *args: str
) -> Any:
    """``run`` on src/pkg/mean.py (code-review) against a server answering ``segments``,
    every one but the last cut off at the token cap."""
    replies = [chat_reply(s, "length") for s in segments[:-1]] + [chat_reply(segments[-1])]
    stub = make_stub(replies)
    return cli(
        "run", "--template", "code-review", "-c", "src/pkg/mean.py", "-p", "Review.",
        "--endpoint", stub.base_url, "--retry-wait", "0.01", "--json", *args,
    )  # fmt: skip


#: What a code-review answer says before its findings block.
PROSE_END = "**1. VERDICT** Not ready.\n\n**5. FINDINGS BLOCK**\n\n"
