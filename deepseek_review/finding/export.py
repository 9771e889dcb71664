"""One export per format, as text: the dispatch ``findings --format`` uses."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deepseek_review.errors import ConfigError, FindingsGate, OutputError
from deepseek_review.finding.derive import Collected, collect, receipts_json
from deepseek_review.finding.github import to_github
from deepseek_review.finding.markdown import to_markdown
from deepseek_review.finding.model import SEVERITIES, Anchored
from deepseek_review.finding.rdjson import to_rdjson, to_rdjsonl
from deepseek_review.finding.sarif import to_sarif
from deepseek_review.records.canonical import pretty_json
from deepseek_review.records.storage import write_replacing
from deepseek_review.trust.rule import TrustPolicy
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
                for p, why in sorted(collected.admission.set_aside.items())
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


@dataclass(frozen=True)
class FindingsExport:
    """What ``findings`` produced: the collected findings, the export text, and the
    findings at or above ``fail_on`` (the gate)."""

    collected: Collected
    format: str
    text: str
    fail_on: str | None
    output: Path | None

    @property
    def gate(self) -> list[Anchored]:
        return [] if self.fail_on is None else self.collected.at_or_above(self.fail_on)

    def raise_for_gate(self) -> None:
        """:class:`FindingsGate` (exit 13) when a finding is at or above ``fail_on``, or when
        any review under the paths was not read: a segment the trust rule set aside, a chain
        that forks, breaks or has no usable findings block. A gate passes only on reviews it
        read whole, so files nobody vouches for can never make it pass."""
        if self.fail_on is None:
            return
        gate = self.gate
        if gate:
            counts = Counter(a.finding.severity for a in gate)
            listed = ", ".join(f"{counts[s]} {s}" for s in SEVERITIES if counts[s])
            raise FindingsGate(f"findings at or above {self.fail_on}: {listed}")
        admission = self.collected.admission
        note = admission.note()
        if note is not None:
            raise FindingsGate(f"the gate cannot pass: {note} (first: {admission.first()})")
        if admission.unverified:
            rel = min(admission.unverified)
            n = len(admission.unverified)
            raise FindingsGate(
                f"the gate cannot pass: {n} segment{'s' if n != 1 else ''} "
                f"{'do' if n != 1 else 'does'} not verify (first: {rel}: "
                f"{admission.unverified[rel]}: {admission.details[rel]})"
            )
        unread = [p for p in self.collected.problems if p[0] not in self.collected.without_block]
        if unread:
            path, why = unread[0]
            more = f" (and {len(unread) - 1} more)" if len(unread) > 1 else ""
            raise FindingsGate(f"the gate cannot pass: {path}: {why}{more}")


def check_choice(value: str | None, choices: Sequence[str], what: str) -> None:
    if value is not None and value not in choices:
        raise ConfigError(f"{what} {value!r}: choose from {', '.join(choices)}")


def export(
    root: Path,
    paths: Sequence[str],
    fmt: str,
    output: Path | None,
    fail_on: str | None,
    policy: TrustPolicy | None = None,
) -> FindingsExport:
    """Collect (the reviews the trust rule admits: :mod:`..trust`), render, and write
    ``output`` when given (replaced atomically: an export is meant to be rewritten); the gate
    is left to :meth:`FindingsExport.raise_for_gate`."""
    check_choice(fmt, list(FORMATS), "findings format")
    check_choice(fail_on, SEVERITIES, "findings severity")
    collected = collect(root, paths, policy)
    text = render(collected, fmt)
    if output is not None:
        try:
            write_replacing(output, text.encode("utf-8"))
        except OSError as exc:
            raise OutputError(f"{output}: cannot write ({exc.strerror or exc})") from None
    return FindingsExport(collected, fmt, text, fail_on, output)
