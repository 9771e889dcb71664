"""The findings block of an answer: found, parsed and validated, never guessed or repaired.

A review template asks the model to end with one fenced JSON block ``{"findings": [...]}``
(``schemas/findings.schema.json``). It is looked for in the **stitched** answer of the whole
chain, so a block cut by a continuation seam is found whole. Fences are read as Markdown
reads them (an opening line of three or more backticks or tildes, closed by a line of the
same character at least as long), so a block quoted inside a longer fence is not a
candidate. A candidate is a fence whose info string is ``json`` and whose text mentions
``"findings"``. An answer with no such fence that is, whole, a JSON object (what a server's
structured output gives) is read as the block. None, two or more, an unclosed one, one that
is not JSON (prose after the JSON inside the fence included), or one that does not match the
schema: each is an :class:`~deepseek_review.errors.InputError` saying so and where ("no
findings: ...").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from .. import safejson
from ..errors import InputError
from ..resources import resource_dir
from .model import Finding

SCHEMA_NAME = "findings.schema.json"
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Block:
    """A fenced block: the answer line of its opening fence (1-based), its info string and
    text, and whether a closing fence was found."""

    line: int
    info: str
    text: str
    closed: bool


def fenced_blocks(text: str) -> list[Block]:
    """Every top-level fenced block of a Markdown text, in order."""
    blocks: list[Block] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE_RE.match(lines[i])
        if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)):
            i += 1
            continue
        fence, start = m.group(1), i
        close = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        i += 1
        while i < len(lines) and not close.match(lines[i]):
            i += 1
        body = "\n".join(lines[start + 1 : i])
        blocks.append(Block(start + 1, m.group(2).strip(), body, i < len(lines)))
        i += 1
    return blocks


def _candidates(text: str) -> list[Block]:
    return [
        b
        for b in fenced_blocks(text)
        if b.info.lower().split()[:1] == ["json"] and '"findings"' in b.text
    ]


@cache
def schema() -> dict[str, Any]:
    """The published findings schema (bundled with the package)."""
    data = json.loads((resource_dir("schemas") / SCHEMA_NAME).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _where(path: Any) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "the block"


def validate(data: Any, where: str) -> list[Finding]:
    """The findings of a parsed block, or :class:`InputError` naming the first violation."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(schema()).iter_errors(data))
    if error is not None:
        raise InputError(
            f"no findings: {where} does not match {SCHEMA_NAME}: "
            f"{_where(error.absolute_path)}: {error.message}"
        )
    for i, item in enumerate(data["findings"]):
        if item["end_line"] < item["start_line"]:
            raise InputError(
                f"no findings: {where} does not match {SCHEMA_NAME}: findings[{i}]: "
                f"end_line {item['end_line']} is before start_line {item['start_line']}"
            )
    return [Finding.from_json(item) for item in data["findings"]]


def extract(text: str) -> list[Finding]:
    """The findings of a stitched answer; :class:`InputError` ("no findings: ...") when its
    block is missing, ambiguous, unclosed, not JSON or not valid."""
    found = _candidates(text)
    if not found and text.lstrip().startswith("{") and '"findings"' in text:
        # Structured output: the whole answer is the object (nothing around it is trimmed).
        return _parse(text, "the answer (a JSON object, as structured output gives)", line=0)
    if not found:
        raise InputError('no findings: the answer has no ```json block holding "findings"')
    if len(found) > 1:
        lines = ", ".join(str(b.line) for b in found)
        raise InputError(
            f"no findings: the answer has {len(found)} findings blocks (at lines {lines}); "
            "which one is meant is not guessed"
        )
    block = found[0]
    where = f"the block at line {block.line}"
    if not block.closed:
        raise InputError(f"no findings: {where} is not closed (the answer ends inside it)")
    return _parse(block.text, where, line=block.line)


def _parse(text: str, where: str, *, line: int) -> list[Finding]:
    """The findings of one block's text; ``line``: the answer line before its first line."""
    try:
        data = safejson.loads(text, what=where)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"no findings: {where} is not valid JSON: {exc.msg} "
            f"(answer line {line + exc.lineno}, column {exc.colno})"
        ) from None
    except ValueError as exc:
        raise InputError(f"no findings: {where} is not valid JSON: {exc}") from None
    return validate(data, where)
