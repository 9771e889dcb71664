"""Findings in reviewdog's Diagnostic Format: rdjson (one object) and rdjsonl (a line each).

Ranges are linewise (no columns): reviewdog then takes start to end inclusive, which is
what a finding's ``start_line``..``end_line`` means, and a suggestion replaces those whole
lines. A finding demoted to its file has a path and no range; one demoted to the review is
shown on the review's answer file. ``reviewdog -f=rdjsonl`` or ``-f=rdjson`` reads them.
"""

from __future__ import annotations

import json
from typing import Any

from deepseek_review.finding.derive import Collected
from deepseek_review.finding.model import Anchored

#: reviewdog severities by finding severity.
SEVERITY = {"critical": "ERROR", "major": "ERROR", "minor": "WARNING", "nit": "INFO"}
SOURCE = {"name": "deepseek-review"}


def diagnostic(a: Anchored) -> dict[str, Any]:
    """One finding as a reviewdog Diagnostic."""
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
    if a.anchored and f.suggestion is not None and a.where is not None:
        # Linewise: the replaced text does not include the last line's end of line.
        text = f.suggestion[:-1] if f.suggestion.endswith("\n") else f.suggestion
        d["suggestions"] = [{"range": line_range, "text": text}]
    if not a.anchored:
        d["original_output"] = f"unanchored: {a.reason}"
    return d


def to_rdjson(collected: Collected) -> dict[str, Any]:
    """A whole rdjson document (``DiagnosticResult``)."""
    return {"source": SOURCE, "diagnostics": [diagnostic(a) for a in collected.findings]}


def to_rdjsonl(collected: Collected) -> str:
    """One Diagnostic per line (rdjsonl)."""
    return "".join(json.dumps(diagnostic(a), ensure_ascii=False) + "\n" for a in collected.findings)
