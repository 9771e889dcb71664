"""One export per format, as text: the dispatch ``findings --format`` uses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from deepseek_review.errors import ConfigError
from deepseek_review.finding.derive import Collected, receipts_json
from deepseek_review.finding.github import to_github
from deepseek_review.finding.markdown import to_markdown
from deepseek_review.finding.rdjson import to_rdjson, to_rdjsonl
from deepseek_review.finding.sarif import to_sarif
from deepseek_review.records.canonical import pretty_json
from deepseek_review.util.textsafe import json_safe

#: The ``schema`` value of this tool's own findings JSON
#: (``schemas/deepseek-review-findings-v1.schema.json``).
FINDINGS_SCHEMA = "deepseek_review_findings_v1"


def to_json(collected: Collected) -> dict[str, Any]:
    """The findings in this tool's own JSON form."""
    return {
        "schema": FINDINGS_SCHEMA,
        "counts": collected.counts(),
        "findings": [a.to_json() for a in collected.findings],
        "receipts": receipts_json(collected),
        "problems": [
            *({"path": p, "reason": why} for p, why in collected.problems),
            *(
                {"path": p, "reason": f"set aside by the trust rule: {why}"}
                for p, why in sorted(collected.set_aside.items())
            ),
        ],
    }


def _pretty(data: dict[str, Any]) -> str:
    """Indented JSON without raw control characters (C1, bidi): it still decodes to the
    exact values, and is safe to print."""
    return json_safe(pretty_json(data).decode("utf-8"))


FORMATS: dict[str, Callable[[Collected], str]] = {
    "json": lambda c: _pretty(to_json(c)),
    "sarif": lambda c: _pretty(to_sarif(c)),
    "rdjson": lambda c: _pretty(to_rdjson(c)),
    "rdjsonl": lambda c: json_safe(to_rdjsonl(c)),
    "github": to_github,
    "markdown": to_markdown,
}


def render(collected: Collected, fmt: str) -> str:
    """The export of ``collected`` in ``fmt`` (one of :data:`FORMATS`)."""
    return FORMATS[fmt](collected)


def check_choice(value: str | None, choices: Sequence[str], what: str) -> None:
    if value is not None and value not in choices:
        raise ConfigError(f"{what} {value!r}: choose from {', '.join(choices)}")
