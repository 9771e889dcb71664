"""Findings against a baseline, an earlier run's: new, unchanged, or absent now.

A finding's identity is its fingerprint (:mod:`.fingerprint`: rule, path, and the quoted or
cited text, never line numbers), so a problem keeps it when lines move. Each current finding
is ``new`` (no finding of the baseline has its fingerprint) or ``unchanged``; each finding of
the baseline no longer found is ``absent``: listed, never gated. The baseline is read from a
SARIF log or a findings JSON file (version 1 or 2) this tool wrote; a review folder is
collected through the trust rule by ``findings`` itself (:mod:`deepseek_review.trust.findings`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from deepseek_review.errors import InputError
from deepseek_review.finding.derive import Collected
from deepseek_review.finding.export import output_version
from deepseek_review.finding.fingerprint import KEY
from deepseek_review.finding.model import SEVERITIES, Anchored, Finding, Level
from deepseek_review.util import safejson
from deepseek_review.util.resources import resource_dir

#: The biggest baseline file read (a SARIF log of 1,000 findings is well under 10 MiB).
MAX_BASELINE_BYTES = 64 * 1024 * 1024
_PRINT_RE = re.compile(r"^[0-9a-f]{64}$")
#: A finding's severity from a SARIF level, when the result does not say it.
_BY_LEVEL = {"error": "major", "warning": "minor", "note": "nit"}


def compare(collected: Collected, baseline: Sequence[Anchored]) -> None:
    """Mark each finding of ``collected`` new or unchanged against ``baseline``, and list the
    baseline's findings not found now as absent (one per fingerprint)."""
    before = {a.fingerprint for a in baseline}
    now = {a.fingerprint for a in collected.findings}
    collected.findings = [
        replace(a, baseline="unchanged" if a.fingerprint in before else "new")
        for a in collected.findings
    ]
    absent: dict[str, Anchored] = {}
    for a in baseline:
        if a.fingerprint not in now:
            absent.setdefault(a.fingerprint, replace(a, baseline="absent"))
    collected.absent = list(absent.values())
    collected.baselined = True


def only_new(collected: Collected) -> None:
    """Keep the findings the baseline does not hold (what a pull request comments on once),
    counting the others in :attr:`Collected.left_out`."""
    kept = [a for a in collected.findings if a.baseline == "new"]
    if len(kept) < len(collected.findings):
        collected.left_out["unchanged_in_baseline"] = len(collected.findings) - len(kept)
    collected.findings = kept


def read_baseline(path: Path, shown: str) -> list[Anchored]:
    """The findings of a SARIF log or findings JSON file (``shown``: how the user named it),
    or :class:`InputError` saying why it is neither."""
    what = f"--baseline {shown}"
    try:
        data = safejson.loads(safejson.read_file(path, max_bytes=MAX_BASELINE_BYTES), what=what)
    except FileNotFoundError:
        raise InputError(f"{what}: no such file or folder") from None
    except OSError as exc:
        raise InputError(f"{what}: cannot read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise InputError(f"{what}: not JSON ({exc})") from None
    version = output_version(data)
    if version is not None:
        _check_schema(data, version, what)
        return [_from_item(item, version) for item in data["findings"]]
    if isinstance(data, dict) and isinstance(data.get("runs"), list):
        return _from_sarif(data)
    raise InputError(
        f"{what}: neither a SARIF log nor a findings file of deepseek-review (its "
        '"schema" is not deepseek_review_findings_v1 or _v2)'
    )


def _check_schema(data: Any, version: int, what: str) -> None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    name = f"deepseek-review-findings-v{version}.schema.json"
    schema = json.loads((resource_dir("schemas") / name).read_text(encoding="utf-8"))
    error = best_match(Draft202012Validator(schema).iter_errors(data))
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path) or "the file"
        raise InputError(f"{what} does not match {name}: {at}: {error.message[:200]}")


def _from_item(item: dict[str, Any], version: int) -> Anchored:
    """A finding of a findings file as it was anchored there."""
    finding = Finding.from_json(item)
    level: Level = item["anchor"]
    if version == 1:
        lines = (finding.start_line, finding.end_line) if level == "line" else None
    else:
        got = item["lines"]
        lines = None if got is None else (got["start"], got["end"])
    reason = item["unanchored_reason"] or ""
    match = item.get("quote_match")
    return Anchored(finding, level, reason, (), item["fingerprint"], item["review"], lines, match)


def _from_sarif(log: dict[str, Any]) -> list[Anchored]:
    """The results of a SARIF log that carry this tool's fingerprint (others are not ours
    to compare), as findings; what a result does not say is left at a plain default."""
    out = []
    for run in log["runs"]:
        results = run.get("results") if isinstance(run, dict) else None
        for result in results if isinstance(results, list) else ():
            found = _sarif_result(result) if isinstance(result, dict) else None
            if found is not None:
                out.append(found)
    return out


def _sarif_result(result: dict[str, Any]) -> Anchored | None:
    prints = result.get("partialFingerprints")
    print_ = prints.get(KEY) if isinstance(prints, dict) else None
    if not isinstance(print_, str) or not _PRINT_RE.match(print_):
        return None
    if result.get("baselineState") == "absent":  # gone already in that run
        return None
    props = result.get("properties")
    props = props if isinstance(props, dict) else {}
    text = _text(result.get("message"))
    title, _, message = text.partition("\n\n")
    path, region = _location(result)
    claimed_path, start, end = _claimed(props.get("claimedLocation"), region)
    severity = props.get("severity")
    if severity not in SEVERITIES:
        severity = _BY_LEVEL.get(str(result.get("level")), "minor")
    category = _str(props, "category") or "general"
    finding = Finding(claimed_path or path, start, end, severity, category, title, message or title)
    anchor = props.get("anchor")
    level: Level = anchor if anchor == "line" or anchor == "review" else "file"
    lines = region if level == "line" else None
    review = _str(props, "review")
    return Anchored(finding, level, _str(props, "unanchoredReason"), (), print_, review, lines)


def _str(props: dict[str, Any], key: str) -> str:
    value = props.get(key)
    return value if isinstance(value, str) else ""


def _text(message: Any) -> str:
    text = message.get("text") if isinstance(message, dict) else None
    return text if isinstance(text, str) else ""


def _location(result: dict[str, Any]) -> tuple[str, tuple[int, int] | None]:
    """The first location's path (decoded) and region lines, as far as they are given."""
    locations = result.get("locations")
    first = locations[0] if isinstance(locations, list) and locations else None
    physical = first.get("physicalLocation") if isinstance(first, dict) else None
    if not isinstance(physical, dict):
        return "", None
    artifact = physical.get("artifactLocation")
    uri = artifact.get("uri") if isinstance(artifact, dict) else None
    region = physical.get("region")
    lines: tuple[int, int] | None = None
    if isinstance(region, dict) and type(region.get("startLine")) is int:
        start: int = region["startLine"]
        end = region.get("endLine")
        lines = (start, end if type(end) is int else start)
    return (unquote(uri) if isinstance(uri, str) else ""), lines


def _claimed(claimed: Any, region: tuple[int, int] | None) -> tuple[str, int, int]:
    """The model's path and lines from ``claimedLocation`` ("path:start-end"), else the
    region's lines (1-1 when there is none)."""
    if isinstance(claimed, str):
        path, _, span = claimed.rpartition(":")
        first, _, last = span.partition("-")
        if first.isdigit() and last.isdigit():
            return path, int(first), int(last)
    start, end = region or (1, 1)
    return "", start, end
