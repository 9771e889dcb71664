"""Structured output as the simulator serves it: each server's schema field honoured.

A request that carries a schema in one of the dialects servers read (Ollama's native
``format``; OpenAI's ``response_format`` of type ``json_schema``; ``json_object`` with a
``schema``, as llama.cpp reads it; llama-server's top-level ``json_schema``) is answered
with one JSON object valid against it: the findings of the ```json block found in its
prompt (a findings extraction's context is the review's answer), else none; asked for
``scores`` (a self-check, whose context is a findings file), a score for each finding from
its fingerprint (:func:`score_of`). JSON mode
without a schema (``json_object``, ``format: "json"``) gets the same object. The
``structured_faults`` knob makes the next such requests answer otherwise, once each:
``invalid`` (JSON that is not valid against the schema), ``not-json``, ``blank``, or
``ignore`` (the schema ignored: the prose answer, as Ollama's cloud does).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from deepseek_review.testing.simulator.answer import (
    conversation_key,
    findings_blocks,
    message_text,
)

#: What ``structured_faults`` may hold.
STRUCTURED_FAULTS = ("invalid", "not-json", "blank", "ignore")


def requested(req: Mapping[str, Any], *, native: bool) -> tuple[bool, dict[str, Any] | None]:
    """Whether the request asks for JSON, and the schema it gives (None: JSON mode only)."""
    if native:
        fmt = req.get("format")
        if isinstance(fmt, dict):
            return True, fmt
        return fmt == "json", None
    top = req.get("json_schema")
    if isinstance(top, dict):
        return True, top
    rf = req.get("response_format")
    if not isinstance(rf, dict):
        return False, None
    if rf.get("type") == "json_schema":
        wrapped = rf.get("json_schema")
        schema = wrapped.get("schema") if isinstance(wrapped, dict) else None
        return True, schema if isinstance(schema, dict) else None
    if rf.get("type") == "json_object":
        schema = rf.get("schema")
        return True, schema if isinstance(schema, dict) else None
    return False, None


def _findings_in_prompt(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The findings of the last findings block inside the prompt's framed files (the
    review's answer), or none."""
    prompt = "".join(message_text(m) for m in conversation_key(messages))
    blocks = findings_blocks(prompt)
    return blocks[-1] if blocks else []


def score_of(fingerprint: str) -> int:
    """The simulator's score (0-10) of a finding in a self-check: from its fingerprint."""
    return int(fingerprint[:2], 16) % 11


def _prints(found: list[Any]) -> list[str]:
    return [f["fingerprint"] for f in found if isinstance(f, dict) and "fingerprint" in f]


def _valid(obj: Any, schema: dict[str, Any] | None) -> bool:
    if schema is None:
        return True
    from jsonschema import Draft202012Validator

    return not any(True for _ in Draft202012Validator(schema).iter_errors(obj))


def answer(
    req: Mapping[str, Any],
    messages: Sequence[Mapping[str, Any]],
    faults: list[str],
    *,
    native: bool,
) -> str | None:
    """The content of a structured answer, or None when the request asks for none (or the
    next fault is ``ignore``); takes the next of ``faults``."""
    wants, schema = requested(req, native=native)
    if not wants:
        return None
    fault = faults.pop(0) if faults else None
    if fault == "ignore":
        return None
    if fault == "blank":
        return ""
    if fault == "not-json":
        return '{"findings": [ oops'
    if fault == "invalid":
        return json.dumps({"findings": [{"path": "x"}]})
    found = _findings_in_prompt(messages)
    obj: dict[str, Any] = {"findings": found}
    if schema is not None and "scores" in schema.get("properties", {}):
        obj = {"scores": [{"fingerprint": f, "score": score_of(f)} for f in _prints(found)]}
    if not _valid(obj, schema):
        obj = {"findings": []}
    return json.dumps(obj, indent=1, ensure_ascii=False)
