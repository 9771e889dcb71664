"""One export per format, as text: the dispatch ``findings --format`` uses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from deepseek_review.errors import ConfigError
from deepseek_review.finding.codequality import to_codequality
from deepseek_review.finding.derive import Collected, receipts_json
from deepseek_review.finding.github import to_github
from deepseek_review.finding.markdown import to_markdown
from deepseek_review.finding.model import OUTPUT_VERSIONS
from deepseek_review.finding.patch import to_patch
from deepseek_review.finding.rdjson import to_rdjson, to_rdjsonl
from deepseek_review.finding.sarif import to_sarif
from deepseek_review.records.canonical import pretty_json
from deepseek_review.util.textsafe import json_safe

#: The ``schema`` value of this tool's own findings JSON, by output version
#: (``schemas/deepseek-review-findings-v<N>.schema.json``); it writes the last.
SCHEMAS = {v: f"deepseek_review_findings_v{v}" for v in OUTPUT_VERSIONS}
FINDINGS_SCHEMA = SCHEMAS[OUTPUT_VERSIONS[-1]]


def to_json(collected: Collected, version: int = OUTPUT_VERSIONS[-1]) -> dict[str, Any]:
    """The findings in this tool's own JSON form, of output ``version`` (1 only to re-derive
    the findings files older versions wrote). Against a baseline, each finding has its
    ``baseline`` state and ``absent`` lists the baseline's findings no longer found."""
    absent = {"absent": [a.to_json() for a in collected.absent]} if collected.baselined else {}
    left_out = {"left_out": dict(collected.left_out)} if collected.left_out else {}
    return {
        "schema": SCHEMAS[version],
        "counts": collected.counts(),
        "findings": [a.to_json(version) for a in collected.findings],
        **absent,
        **left_out,
        "receipts": receipts_json(collected),
        "problems": [
            *({"path": p, "reason": why} for p, why in collected.problems),
            *(
                {"path": p, "reason": f"set aside by the trust rule: {why}"}
                for p, why in sorted(collected.set_aside.items())
            ),
        ],
    }


def output_version(data: bytes | object) -> int | None:
    """The output version of a findings file (its bytes, or its parsed JSON): one of
    :data:`.model.OUTPUT_VERSIONS`, None when it is not one this tool reads."""
    from deepseek_review.util import safejson

    if isinstance(data, bytes):
        try:
            data = safejson.loads(data, what="findings")
        except ValueError:
            return None
    name = data.get("schema") if isinstance(data, dict) else None
    return next((v for v, s in SCHEMAS.items() if s == name), None)


def pretty(data: dict[str, Any] | list[dict[str, Any]]) -> str:
    """Indented JSON without raw control characters (C1, bidi): it still decodes to the
    exact values, and is safe to print."""
    return json_safe(pretty_json(data).decode("utf-8"))


FORMATS: dict[str, Callable[[Collected], str]] = {
    "json": lambda c: pretty(to_json(c)),
    "sarif": lambda c: pretty(to_sarif(c)),
    "rdjson": lambda c: pretty(to_rdjson(c)),
    "rdjsonl": lambda c: json_safe(to_rdjsonl(c)),
    "github": to_github,
    "markdown": to_markdown,
    "codequality": lambda c: pretty(to_codequality(c)),
    "patch": to_patch,
}


def render(collected: Collected, fmt: str) -> str:
    """The export of ``collected`` in ``fmt`` (one of :data:`FORMATS`)."""
    return FORMATS[fmt](collected)


def check_choice(value: str | None, choices: Sequence[str], what: str) -> None:
    if value is not None and value not in choices:
        raise ConfigError(f"{what} {value!r}: choose from {', '.join(choices)}")
