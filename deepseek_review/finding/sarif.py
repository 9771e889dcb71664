"""Findings as SARIF 2.1.0, for GitHub code scanning and other SARIF readers.

One run: the tool with one rule per category; each result's level from its severity, its
location (lines only when anchored, the file when demoted to it, the review's answer file
when demoted to the review; a percent-encoded URI relative to ``%SRCROOT%``, never outside
it: :mod:`.location`), a fix when the finding suggests replacement text for its
lines, and ``partialFingerprints`` from content (:mod:`.fingerprint`). The receipts the
findings were derived from are in the run's properties. Against a baseline (:mod:`.baseline`)
each result has its ``baselineState``, and the baseline's findings gone now are results
``absent``.
"""

from __future__ import annotations

from typing import Any

from deepseek_review._version import __version__
from deepseek_review.finding.derive import Collected, receipts_json
from deepseek_review.finding.fingerprint import KEY
from deepseek_review.finding.location import sarif_uri
from deepseek_review.finding.model import Anchored
from deepseek_review.finding.patch import Fix, plan
from deepseek_review.util.project import HOME

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: SARIF levels by severity.
LEVELS = {"critical": "error", "major": "error", "minor": "warning", "nit": "note"}


def _artifact(where: str) -> dict[str, str]:
    return {"uri": sarif_uri(where), "uriBaseId": "%SRCROOT%"}


def _locations(a: Anchored, extents: dict[str, int]) -> list[dict[str, Any]]:
    """Its one location: its lines when anchored, else the whole file it is shown on (when
    its length is known); none when :attr:`Anchored.where` is not a file inside the
    repository."""
    if a.where is None:
        return []
    physical: dict[str, Any] = {"artifactLocation": _artifact(a.where)}
    if a.anchored:
        physical["region"] = {"startLine": a.start_line, "endLine": a.end_line}
    elif a.where in extents:
        n = extents[a.where]
        whole = {"startLine": 1, "endLine": n} if n else {"charOffset": 0, "charLength": 0}
        physical["region"] = whole
    return [{"physicalLocation": physical}]


def _fix(fix: Fix) -> dict[str, Any]:
    """The change :func:`.patch.plan` offers, as the patch makes it: a region without columns
    ends before its last line's end (SARIF 3.30), so the inserted lines are joined by the
    file's line end without a last one; deleted lines take their line end with them (up to
    the start of the next line)."""
    span = f"{fix.first}-{fix.last}"
    region: dict[str, int] = {"startLine": fix.first, "endLine": fix.last}
    if not fix.lines and not fix.ends_file:
        region = {"startLine": fix.first, "startColumn": 1, "endLine": fix.last + 1, "endColumn": 1}
    return {
        "description": {"text": f"{'Replace' if fix.lines else 'Delete'} lines {span}"},
        "artifactChanges": [
            {
                "artifactLocation": _artifact(fix.path),
                "replacements": [
                    {
                        "deletedRegion": region,
                        "insertedContent": {"text": fix.eol.join(fix.lines)},
                    }
                ],
            }
        ],
    }


def _result(
    a: Anchored, rule_index: int, extents: dict[str, int], fix: Fix | None = None
) -> dict[str, Any]:
    f = a.finding
    result: dict[str, Any] = {
        "ruleId": a.rule_id,
        "ruleIndex": rule_index,
        "level": LEVELS[f.severity],
        "message": {"text": f"{f.title}\n\n{f.message}"},
        "locations": _locations(a, extents),
        "partialFingerprints": {KEY: a.fingerprint},
        "properties": {
            "severity": f.severity,
            "category": f.category,
            "anchor": a.level,
            "claimedLocation": f"{f.path}:{f.start_line}-{f.end_line}",
            **({"quote": f.quote} if f.quote is not None else {}),
            **({"quoteMatch": a.quote_match} if a.quote_match is not None else {}),
            **({"unanchoredReason": a.reason} if a.reason else {}),
            "review": a.review,
            **({"reportedBy": list(a.reported_by)} if a.reported_by else {}),
        },
    }
    if a.baseline is not None:
        result["baselineState"] = a.baseline
    if fix is not None:
        result["fixes"] = [_fix(fix)]
    return result


def _rule(a: Anchored) -> dict[str, Any]:
    """One rule per category, described as GitHub's code scanning requires (a full
    description and help, in text and markdown): what such a result is and how to check it."""
    category = a.finding.category
    full = (
        f"A finding of category {category!r} stated by a model in a review made by "
        "deepseek-review; the result names the review's answer file, and the run's "
        "properties list the receipts it was derived from."
    )
    check = (
        "Read the finding against the code it is anchored to; the review it comes from is "
        "proved by its receipt: run deepseek-review verify on the review's folder."
    )
    return {
        "id": a.rule_id,
        "name": category,
        "shortDescription": {"text": f"Review finding: {category}"},
        "fullDescription": {"text": full},
        "help": {
            "text": check,
            "markdown": f"{check.replace('deepseek-review verify', '`deepseek-review verify`')}"
            f"\n\nMore: [deepseek-review]({HOME}).",
        },
        "helpUri": HOME,
    }


def to_sarif(collected: Collected) -> dict[str, Any]:
    """The SARIF log of the collected findings."""
    rules: dict[str, int] = {}
    rule_list: list[dict[str, Any]] = []
    results = []
    extents = collected.extents()
    fixes = plan(collected)
    # Against a baseline, its findings gone now are results too, "absent" (SARIF 3.27.24).
    for a in [*collected.findings, *collected.absent]:
        if a.rule_id not in rules:
            rules[a.rule_id] = len(rule_list)
            rule_list.append(_rule(a))
        results.append(_result(a, rules[a.rule_id], extents, fixes.fix_of(a)))
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "deepseek-review",
                        "version": __version__,
                        "informationUri": HOME,
                        "rules": rule_list,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "repository root"}}},
                "results": results,
                "properties": {
                    **({"leftOut": dict(collected.left_out)} if collected.left_out else {}),
                    "receipts": receipts_json(collected),
                    "unusableReviews": [
                        {"path": p, "reason": why} for p, why in collected.problems
                    ],
                },
            }
        ],
    }
