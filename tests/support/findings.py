"""Shared by the findings tests: validators for the standards, and reviews with answers the
test chooses (a scripted server on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonschema import Draft4Validator, Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from deepseek_review.finding.model import Finding
from tests.support.git import commit
from tests.support.stubs import Reply

STANDARDS = Path(__file__).parents[2] / "deepseek_review" / "standards"
#: ``run --findings`` from the answer's block (the default, ``auto``, asks the server for a
#: structured extraction first).
FROM_BLOCK = ("--findings", "--findings-from", "block")


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


def assert_valid_codequality(report: Any) -> None:
    """Valid against the fields GitLab's documentation requires of a Code Quality report
    (tests/fixtures/gitlab-codequality.schema.json, written from that page)."""
    path = Path(__file__).parents[1] / "fixtures" / "gitlab-codequality.schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    errors = list(Draft202012Validator(schema).iter_errors(report))
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


def diff_review(cli: Any, make_stub: Any, rng: str, *items: dict[str, Any]) -> Any:
    """``run --diff RNG`` against a server answering a findings block of ``items``."""
    stub = make_stub([chat_reply(PROSE_END + block(*items))])
    run = cli(
        "run", "--template", "diff-review", "--diff", rng, "-p", "Review.",
        "--endpoint", stub.base_url, "--retry-wait", "0.01", "--json",
    )  # fmt: skip
    assert run.code == 0, run.err
    return run


def at(line: int, end: int | None = None, path: str = "src/pkg/long.py") -> dict[str, Any]:
    return item(path=path, start_line=line, end_line=end or line, title=f"at {line}")


def two_commits(repo: Path) -> str:
    a = commit(repo, "long", {"src/pkg/long.py": LONG})
    b = commit(repo, "change", {"src/pkg/long.py": CHANGED})
    return f"{a}..{b}"


LONG = "".join(f"x{i} = {i}\n" for i in range(1, 31))


#: LONG with line 2 changed and a line added at the end: hunks at 1-5 and 28-31 (-U3).
CHANGED = LONG.replace("x2 = 2\n", "x2 = 200\n") + "x31 = 31\n"


def last_segment(run: Any) -> Any:
    return run.json()["segments"][-1]


def findings_of(cli: Any, run: Any, fmt: str = "json") -> Any:
    got = cli("findings", run.json()["segments"][-1]["answer_path"], "--format", fmt)
    assert got.code == 0, got.err
    return got


def answer_of(result: Any) -> str:
    """The last segment's answer file of a ``run --json`` result."""
    return str(result.json()["segments"][-1]["answer_path"])


def sources_of(files: dict[str, str]) -> dict[str, Any]:
    """Each file's text as the reviewed version a suggestion's change is made against
    (:attr:`deepseek_review.finding.derive.ReviewFindings.sources`), as read from HEAD."""
    from deepseek_review.finding.derive import Source
    from deepseek_review.git.objects import blob_id

    data = {path: text.encode("utf-8") for path, text in files.items()}
    return {path: Source(b, "HEAD", blob_id(b), True) for path, b in data.items()}
