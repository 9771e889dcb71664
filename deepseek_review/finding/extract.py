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
findings: ..."). A block over a limit (:data:`MAX_BLOCK_BYTES`, the schema's count of
findings and length of each field) is a :class:`FindingsRefused` ("findings refused: ..."),
found before it is parsed: a review cannot make an export cost more than its limits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from deepseek_review.errors import InputError
from deepseek_review.finding.model import Finding
from deepseek_review.util import safejson
from deepseek_review.util.resources import resource_dir

SCHEMA_NAME = "findings.schema.json"
#: The most bytes (UTF-8) a findings block may hold: 1,000 findings of ~1 KiB each. A
#: bigger one is refused before it is parsed (a 17 MiB block of 120,000 findings took 44 s
#: and 1.3 GB, and its SARIF 143 MB). The count and each field are bounded by the schema.
MAX_BLOCK_BYTES = 1024 * 1024
#: Every line that could open or close a fence.
_FENCE_LINE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$", re.MULTILINE)


class FindingsRefused(InputError):
    """A findings block over a limit (:data:`MAX_BLOCK_BYTES`, the schema's count and
    lengths): refused whole, never cut, so no gate passes on part of a review."""


@dataclass(frozen=True)
class Block:
    """A fenced block: the answer line of its opening fence (1-based), its info string,
    where its text lies in the answer (``start``..``end``), and whether a closing fence was
    found."""

    line: int
    info: str
    answer: str = field(repr=False, compare=False)
    start: int
    end: int
    closed: bool

    @property
    def text(self) -> str:
        return self.answer[self.start : self.end]

    def mentions(self, word: str) -> bool:
        return self.answer.find(word, self.start, self.end) >= 0


def fenced_blocks(text: str) -> list[Block]:
    """Every top-level fenced block of a Markdown text, in order. Only the lines that look
    like fences are visited, and a block's text is not copied: a long answer costs one
    regex pass."""
    blocks: list[Block] = []
    opening: re.Match[str] | None = None
    lines_before = 0  # newlines before the last match seen
    last = 0
    for m in _FENCE_LINE_RE.finditer(text):
        lines_before += text.count("\n", last, m.start())
        last = m.start()
        fence, rest = m.group(1), m.group(2)
        if opening is None:
            if not (fence[0] == "`" and "`" in rest):
                opening, opening_line = m, lines_before + 1
            continue
        opened = opening.group(1)
        if fence[0] == opened[0] and len(fence) >= len(opened) and not rest.strip(" \t"):
            body = min(opening.end() + 1, m.start())
            blocks.append(_block(text, opening, opening_line, body, m.start() - 1, True))
            opening = None
    if opening is not None:
        body = min(opening.end() + 1, len(text))
        blocks.append(_block(text, opening, opening_line, body, len(text), False))
    return blocks


def _block(text: str, m: re.Match[str], line: int, start: int, end: int, closed: bool) -> Block:
    return Block(line, m.group(2).strip(), text, start, max(start, end), closed)


def _candidates(text: str) -> list[Block]:
    return [
        b
        for b in fenced_blocks(text)
        if b.info.lower().split()[:1] == ["json"] and b.mentions('"findings"')
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

    items = data.get("findings") if isinstance(data, dict) else None
    most = schema()["properties"]["findings"]["maxItems"]
    if isinstance(items, list) and len(items) > most:  # before validating each of them
        raise FindingsRefused(
            f"findings refused: {where} holds {len(items):,} findings; "
            f"the limit is {most:,} per review"
        )
    error = best_match(Draft202012Validator(schema()).iter_errors(data))
    if error is not None and error.validator == "maxLength":
        raise FindingsRefused(
            f"findings refused: {where}: {_where(error.absolute_path)} is longer than the "
            f"{error.validator_value:,} characters {SCHEMA_NAME} allows"
        )
    if error is not None:
        said = error.message if len(error.message) <= 200 else error.message[:200] + "…"
        raise InputError(
            f"no findings: {where} does not match {SCHEMA_NAME}: "
            f"{_where(error.absolute_path)}: {said}"
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
        where = "the answer (a JSON object, as structured output gives)"
        _bounded(text, 0, len(text), where)
        return _parse(text, where, line=0)
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
    _bounded(text, block.start, block.end, where)
    return _parse(block.text, where, line=block.line)


#: Keys of the findings schema left out of the schema a server is sent: annotations, and the
#: upper bounds (a grammar built from a bound of 8,000 characters is huge: llama.cpp expands
#: it; OpenAI's strict mode refuses them). The bounds still hold: :func:`validate` applies them.
_NOT_SENT = frozenset({"$schema", "$id", "title", "description", "maxLength", "maxItems"})


@cache
def wire_schema() -> dict[str, Any]:
    """The findings schema as a structured-output request carries it (``run --findings-from
    structured``): the bundled schema without :data:`_NOT_SENT`, and with ``quote`` required
    (the findings are anchored by their quotes). A reply is validated against it, as sent,
    then against the bundled schema."""

    def bare(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        out = {k: bare(v) for k, v in node.items() if k not in _NOT_SENT and k != "properties"}
        if "properties" in node:  # property names are not keywords: every one is kept
            out["properties"] = {k: bare(v) for k, v in node["properties"].items()}
        return out

    out: dict[str, Any] = bare(schema())
    finding = out["$defs"]["finding"]
    required = finding["required"]
    finding["required"] = [*required[:3], "quote", *required[3:]]
    return out


def extract_structured(text: str) -> list[Finding]:
    """The findings of a structured-output reply: the whole answer one JSON object valid
    against :func:`wire_schema` (what was asked for) and the findings schema;
    :class:`InputError` ("no findings: ...") otherwise. Nothing around it is trimmed."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    where = "the extraction's answer"
    if not text.strip():
        raise InputError(f"no findings: {where} is blank")
    _bounded(text, 0, len(text), where)
    data = _loads(text, where, None)
    error = best_match(Draft202012Validator(wire_schema()).iter_errors(data))
    if error is not None:
        said = error.message if len(error.message) <= 200 else error.message[:200] + "…"
        raise InputError(
            f"no findings: {where} does not match the schema it was sent: "
            f"{_where(error.absolute_path)}: {said}"
        )
    return validate(data, where)


def _bounded(text: str, start: int, end: int, where: str) -> None:
    """:class:`FindingsRefused` when ``text[start:end]`` is over :data:`MAX_BLOCK_BYTES` in
    UTF-8. Its length in characters is a lower bound: a block plainly too big is not copied."""
    size, at_least = end - start, "at least "
    if size <= MAX_BLOCK_BYTES:
        size, at_least = len(text[start:end].encode("utf-8")), ""
        if size <= MAX_BLOCK_BYTES:
            return
    raise FindingsRefused(
        f"findings refused: {where} holds {at_least}{size:,} bytes; "
        f"the limit is {MAX_BLOCK_BYTES:,} bytes (1 MiB) per review"
    )


def _parse(text: str, where: str, *, line: int) -> list[Finding]:
    """The findings of one block's text; ``line``: the answer line before its first line."""
    return validate(_loads(text, where, line), where)


def _loads(text: str, where: str, line: int | None) -> Any:
    """``text`` parsed (:class:`InputError` saying where it is not JSON); ``line``: the
    answer line before its first line (None: the whole answer)."""
    try:
        return safejson.loads(text, what=where)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}" if line is None else f"answer line {line + exc.lineno}"
        raise InputError(
            f"no findings: {where} is not valid JSON: {exc.msg} ({at}, column {exc.colno})"
        ) from None
    except ValueError as exc:
        raise InputError(f"no findings: {where} is not valid JSON: {exc}") from None
