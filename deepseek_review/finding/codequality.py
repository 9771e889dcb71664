"""Findings as GitLab's Code Quality report: the merge request widget and changes view.

GitLab reads a JSON array of issues in a subset of Code Climate's format; each must have
``description``, ``check_name``, ``fingerprint``, ``severity`` (``info``, ``minor``, ``major``,
``critical``, ``blocker``), ``location.path`` and ``location.lines.begin``
(https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format). GitLab has no
issue without a line: a finding shown on its file, or on the review, is placed on line 1 of
that file (as other tools report file-level issues) and its description says why it is not on
its own lines, so nobody reads line 1 as the model's claim. The fingerprint is the finding's
content fingerprint (:mod:`.fingerprint`), so GitLab matches a finding across pipelines
however its lines moved; GitLab shows findings with equal fingerprints once.
"""

from __future__ import annotations

from typing import Any

from deepseek_review.finding.derive import Collected
from deepseek_review.finding.location import repo_path
from deepseek_review.finding.model import Anchored

#: GitLab severities by finding severity (``blocker`` is left for what blocks a merge by policy).
SEVERITY = {"critical": "critical", "major": "major", "minor": "minor", "nit": "info"}


def issue(a: Anchored) -> dict[str, Any] | None:
    """One finding as a Code Quality issue; None when it can be shown on no file inside the
    repository (its path and the review's both refused by :func:`.location.repo_path`)."""
    f = a.finding
    path = a.where or repo_path(a.review)
    if path is None:
        return None
    lines = {"begin": a.start_line, "end": a.end_line} if a.anchored else {"begin": 1}
    where = "" if a.anchored else f"\n\n(Shown on line 1 of {path}: {a.reason}.)"
    return {
        "type": "issue",
        "check_name": a.rule_id,
        "description": f"[{f.severity}] {f.title}: {f.message}{where}",
        "fingerprint": a.fingerprint,
        "severity": SEVERITY[f.severity],
        "location": {"path": path, "lines": lines},
    }


def to_codequality(collected: Collected) -> list[dict[str, Any]]:
    """The report: one issue per finding shown on a file inside the repository."""
    return [i for i in map(issue, collected.findings) if i is not None]
