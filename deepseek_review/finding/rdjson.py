"""Findings in reviewdog's Diagnostic Format: rdjson (one object) and rdjsonl (a line each).

Ranges are linewise (no columns): reviewdog then takes start to end inclusive, which is
what a finding's ``start_line``..``end_line`` means, and a suggestion replaces those whole
lines: its text is the replacement lines without the last line end (empty: the lines are
deleted), which reviewdog posts as a GitHub suggestion block on exactly those lines. A
finding has a suggestion here when :func:`.patch.plan` offers it as a change (the same
lines and text as the patch). A finding demoted to its file has a path and no range; one
demoted to the review is shown on the review's answer file. ``reviewdog -f=rdjsonl`` or
``-f=rdjson`` reads them.
"""

from __future__ import annotations

import json
from typing import Any

from deepseek_review.finding.derive import Collected
from deepseek_review.finding.model import Anchored
from deepseek_review.finding.patch import Fix, plan

#: reviewdog severities by finding severity.
SEVERITY = {"critical": "ERROR", "major": "ERROR", "minor": "WARNING", "nit": "INFO"}
SOURCE = {"name": "deepseek-review"}


def diagnostic(a: Anchored, fix: Fix | None = None) -> dict[str, Any]:
    """One finding as a reviewdog Diagnostic (``fix``: the change offered for it)."""
    f = a.finding
    line_range = {"start": {"line": a.start_line}, "end": {"line": a.end_line}}
    d: dict[str, Any] = {
        "message": f"[{f.severity}] {f.title}\n\n{f.message}",
        "severity": SEVERITY[f.severity],
        "source": SOURCE,
        "code": {"value": a.rule_id},
    }
    if a.where is not None:  # else on no file (:mod:`.location`)
        d["location"] = {"path": a.where, **({"range": line_range} if a.anchored else {})}
    if fix is not None:  # linewise: the replaced text does not include the last line end
        fixed = {"start": {"line": fix.first}, "end": {"line": fix.last}}
        d["suggestions"] = [{"range": fixed, "text": fix.text}]
    if not a.anchored:
        d["original_output"] = f"unanchored: {a.reason}"
    return d


def to_rdjson(collected: Collected) -> dict[str, Any]:
    """A whole rdjson document (``DiagnosticResult``)."""
    fixes = plan(collected)
    return {
        "source": SOURCE,
        "diagnostics": [diagnostic(a, fixes.fix_of(a)) for a in collected.findings],
    }


def to_rdjsonl(collected: Collected) -> str:
    """One Diagnostic per line (rdjsonl)."""
    fixes = plan(collected)
    return "".join(
        json.dumps(diagnostic(a, fixes.fix_of(a)), ensure_ascii=False) + "\n"
        for a in collected.findings
    )
