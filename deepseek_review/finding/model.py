"""A finding as a review states it, and as it stands once anchored.

:class:`Finding` is one item of the findings block, exactly as the model wrote it (the keys of
``schemas/findings.schema.json``). :class:`Anchored` adds what the tool established: where the
finding can honestly be shown (a line range, the file, or the review as a whole), why, and the
fingerprint that keeps its identity across runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from deepseek_review.finding.location import repo_path

#: The findings output versions (``schemas/deepseek-review-findings-v<N>.schema.json``):
#: 1 anchored by the model's line numbers alone, 2 by the finding's quote when it has one.
OUTPUT_VERSIONS = (1, 2)
#: What a baseline says of a finding: new, in it too, or in it and gone now (listed apart).
BASELINE_STATES = ("new", "unchanged", "absent")
#: Most severe first; the index is the rank (``--fail-on`` compares ranks).
SEVERITIES = ("critical", "major", "minor", "nit")
Level = Literal["line", "file", "review"]


def rank(severity: str) -> int:
    """0 for critical ... 3 for nit."""
    return SEVERITIES.index(severity)


@dataclass(frozen=True)
class Finding:
    """One finding as the model wrote it (validated against the schema)."""

    path: str
    start_line: int
    end_line: int
    severity: str
    category: str
    title: str
    message: str
    suggestion: str | None = None
    quote: str | None = None
    """The exact text of the lines it is about (blocks written before quotes have none)."""

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> Finding:
        return cls(
            item["path"], item["start_line"], item["end_line"], item["severity"],
            item["category"], item["title"], item["message"], item.get("suggestion"),
            item.get("quote"),
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            **({"quote": self.quote} if self.quote is not None else {}),
            "severity": self.severity,
            "category": self.category,
            "title": self.title,
            "message": self.message,
        }
        if self.suggestion is not None:
            d["suggestion"] = self.suggestion
        return d


@dataclass(frozen=True)
class Anchored:
    """A finding with where it is shown: ``line`` (its lines exist and may take a comment),
    ``file`` (its path is a context file but its lines could not be confirmed), or
    ``review`` (its path is not one of the review's context files). Never a guessed line."""

    finding: Finding
    level: Level
    reason: str
    """Why it is not anchored to its lines ("" when it is)."""
    cited: tuple[str, ...]
    """The text of the cited lines in the reviewed version (empty unless ``level`` is line)."""
    fingerprint: str
    review: str
    """The answer file of the chain's last segment: where a review-level finding is shown."""
    lines: tuple[int, int] | None = None
    """The lines it is anchored to (first, last; inclusive): where its quote was found, else
    the lines the model wrote; None unless ``level`` is line."""
    quote_match: str | None = None
    """How its quote was found: ``exact``, ``whitespace`` (each line's leading and trailing
    whitespace ignored), ``not found``; None when it has no quote or it was not looked for."""
    baseline: str | None = None
    """``new``, ``unchanged`` or ``absent`` against a baseline (None: no baseline given)."""
    reported_by: tuple[str, ...] = ()
    """When several reviews reported it (a split review's parts and its synthesis): each
    one's answer file, in the order they were read; empty when one review did."""

    @property
    def anchored(self) -> bool:
        return self.level == "line" and self.lines is not None

    @property
    def start_line(self) -> int:
        """The first anchored line (the model's ``start_line`` when not anchored)."""
        return self.finding.start_line if self.lines is None else self.lines[0]

    @property
    def end_line(self) -> int:
        return self.finding.end_line if self.lines is None else self.lines[1]

    @property
    def where(self) -> str | None:
        """The file every export shows it on (the review's answer file for a review-level
        finding), repository-relative and normalised; None when that is not a location inside
        the repository (:func:`.location.repo_path`): the finding is then shown on no file."""
        return repo_path(self.review if self.level == "review" else self.finding.path)

    @property
    def rule_id(self) -> str:
        return rule_id(self.finding.category)

    def to_json(self, version: int = 2) -> dict[str, Any]:
        """Its item in the findings output of ``version`` (:data:`OUTPUT_VERSIONS`): version 1
        has neither the anchored lines nor how the quote was found (it had no quotes)."""
        if version == 1:
            return {
                **self.finding.to_json(),
                "anchor": self.level,
                "unanchored_reason": self.reason or None,
                "fingerprint": self.fingerprint,
                "review": self.review,
            }
        lines = None if self.lines is None else {"start": self.lines[0], "end": self.lines[1]}
        return {
            **self.finding.to_json(),
            "anchor": self.level,
            "lines": lines,
            "quote_match": self.quote_match,
            "unanchored_reason": self.reason or None,
            "fingerprint": self.fingerprint,
            "review": self.review,
            **({"baseline": self.baseline} if self.baseline is not None else {}),
            **({"reported_by": list(self.reported_by)} if self.reported_by else {}),
        }


def rule_id(category: str) -> str:
    """A stable rule id from a category: lower case, runs of other characters as ``-``."""
    slug = "".join(c if c.isalnum() else "-" for c in category.strip().lower())
    return "deepseek-review/" + ("-".join(p for p in slug.split("-") if p) or "general")
