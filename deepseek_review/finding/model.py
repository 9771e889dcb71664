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

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> Finding:
        return cls(
            item["path"], item["start_line"], item["end_line"], item["severity"],
            item["category"], item["title"], item["message"], item.get("suggestion"),
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
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

    @property
    def anchored(self) -> bool:
        return self.level == "line"

    @property
    def where(self) -> str | None:
        """The file every export shows it on (the review's answer file for a review-level
        finding), repository-relative and normalised; None when that is not a location inside
        the repository (:func:`.location.repo_path`): the finding is then shown on no file."""
        return repo_path(self.review if self.level == "review" else self.finding.path)

    @property
    def rule_id(self) -> str:
        return rule_id(self.finding.category)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.finding.to_json(),
            "anchor": self.level,
            "unanchored_reason": self.reason or None,
            "fingerprint": self.fingerprint,
            "review": self.review,
        }


def rule_id(category: str) -> str:
    """A stable rule id from a category: lower case, runs of other characters as ``-``."""
    slug = "".join(c if c.isalnum() else "-" for c in category.strip().lower())
    return "deepseek-review/" + ("-".join(p for p in slug.split("-") if p) or "general")
