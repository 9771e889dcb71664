"""``run --findings --self-check``: each finding scored 0-10 by the model, those under the
threshold dropped, every score kept.

The self-check is one more receipted request (:mod:`deepseek_review.reviewing.extraction`):
its context is the run's findings file, and its reply one JSON object, ``{"scores":
[{"fingerprint": ..., "score": 0-10}, ...]}``, one score for each finding (:func:`scores`:
anything else is refused, never repaired). The findings file written beside it
(:func:`checked`) is the one it read with the findings scored under the threshold moved
to ``self_check.dropped``, and ``self_check`` holding the threshold and every score: derived
from the reply alone, so ``verify`` re-derives it byte for byte
(:func:`deepseek_review.finding.sidecar.checked_bytes`).
"""

from __future__ import annotations

import json
from typing import Any

from deepseek_review.errors import InputError
from deepseek_review.finding.model import SEVERITIES
from deepseek_review.util import safejson

#: The bundled template of the self-check request.
SELF_CHECK_TEMPLATE = "findings-self-check"
#: The schema of the reply, as the request carries it.
SCORES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["scores"],
    "additionalProperties": False,
    "properties": {
        "scores": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["fingerprint", "score"],
                "additionalProperties": False,
                "properties": {
                    "fingerprint": {"type": "string", "minLength": 1},
                    "score": {"type": "integer", "minimum": 0, "maximum": 10},
                },
            },
        }
    },
}


def findings_of(data: bytes, where: str) -> dict[str, Any]:
    """A findings file's JSON (:class:`InputError` when it is not one)."""
    try:
        parsed = safejson.loads(data, what=where)
    except ValueError as exc:
        raise InputError(f"{where}: not JSON ({exc})") from None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("findings"), list):
        raise InputError(f"{where}: not a findings file")
    return parsed


def scores(reply: str, findings: dict[str, Any]) -> dict[str, int]:
    """The score of each finding by fingerprint, from the self-check's reply: valid JSON
    against :data:`SCORES_SCHEMA`, every finding of ``findings`` scored exactly once and no
    other (:class:`InputError` saying what is wrong otherwise)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    where = "the self-check's answer"
    try:
        data = safejson.loads(reply, what=where)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where} is not valid JSON: {exc.msg}") from None
    except ValueError as exc:
        raise InputError(f"{where} is not valid JSON: {exc}") from None
    error = best_match(Draft202012Validator(SCORES_SCHEMA).iter_errors(data))
    if error is not None:
        raise InputError(f"{where} does not match the schema it was sent: {error.message[:200]}")
    wanted = [f["fingerprint"] for f in findings["findings"]]
    got: dict[str, int] = {}
    for item in data["scores"]:
        if item["fingerprint"] in got or item["fingerprint"] not in wanted:
            raise InputError(f"{where} scores {item['fingerprint'][:16]}… twice or unasked")
        got[item["fingerprint"]] = item["score"]
    missing = [f for f in wanted if f not in got]
    if missing:
        raise InputError(f"{where} leaves {len(missing)} finding(s) unscored")
    return got


def checked(findings: dict[str, Any], scored: dict[str, int], threshold: int) -> dict[str, Any]:
    """``findings`` with those scored under ``threshold`` dropped (kept, with every score,
    in ``self_check``) and the counts of what is left."""
    kept = [f for f in findings["findings"] if scored[f["fingerprint"]] >= threshold]
    dropped = [f for f in findings["findings"] if scored[f["fingerprint"]] < threshold]
    counts = dict.fromkeys(SEVERITIES, 0)
    for f in kept:
        counts[f["severity"]] += 1
    check = {"threshold": threshold, "scores": scored, "dropped": dropped}
    return {**findings, "counts": counts, "findings": kept, "self_check": check}


def prompt_text() -> str:
    """The self-check's request, with the reply's schema (JSON mode needs it in the prompt)."""
    shown = json.dumps(SCORES_SCHEMA, separators=(",", ":"), sort_keys=True)
    return (
        "Score each finding of the findings file below from 0 to 10: how sure you are, "
        "reading the code it quotes (its quote) and what it says, that a maintainer should "
        "act on it. 10: certainly a real defect as stated; 5: plausible but unproven; 0: "
        "wrong, or not about the quoted code. Answer with one JSON object and nothing else, "
        "one score for each finding by its fingerprint, valid against this JSON Schema:\n\n"
        f"{shown}"
    )
