"""The findings block: found in the stitched answer, validated, never guessed or repaired."""

from __future__ import annotations

import json

import pytest

from deepseek_review.errors import InputError
from deepseek_review.finding.extract import extract, fenced_blocks
from tests.support.findings import block, item

PROSE = "**1. VERDICT** Not ready.\n\n**2. FINDINGS**\n\n| # | Severity |\n|---|---|\n\n"


def refusal(text: str) -> str:
    with pytest.raises(InputError) as exc:
        extract(text)
    return exc.value.message


def test_the_block_at_the_end_of_the_answer_gives_its_findings():
    got = extract(PROSE + block(item(), item(severity="nit", start_line=1, end_line=1)))
    assert [(f.severity, f.start_line) for f in got] == [("major", 2), ("nit", 1)]


def test_a_block_cut_by_a_continuation_seam_is_found_in_the_stitched_text():
    text = PROSE + block(item())
    cut = text.index('"severity"')
    first, second = text[:cut], text[cut:]
    assert refusal(first).endswith("is not closed (the answer ends inside it)")
    assert extract(first + second)[0].title == "Division by zero on an empty list"


def test_two_findings_blocks_are_refused_naming_both_lines():
    text = PROSE + block(item()) + "\nAnd again:\n\n" + block(item(severity="nit"))
    assert refusal(text) == (
        "no findings: the answer has 2 findings blocks (at lines 8, 26); "
        "which one is meant is not guessed"
    )


def test_prose_after_the_block_is_fine():
    assert len(extract(PROSE + block(item()) + "\nThat is all.\n")) == 1


def test_prose_after_the_json_inside_the_fence_is_invalid_json_not_trimmed():
    text = PROSE + block(item()).replace("}\n```", "}\nThat is all.\n```")
    assert refusal(text) == (
        "no findings: the block at line 8 is not valid JSON: Extra data (answer line 22, column 1)"
    )


def test_a_code_fence_inside_a_message_stays_part_of_the_message():
    message = "Use this:\n```python\nif not xs:\n    raise ValueError\n```\n"
    got = extract(PROSE + block(item(message=message)))
    assert got[0].message == message


def test_a_findings_block_quoted_inside_a_longer_fence_is_not_the_block():
    quoted = "````markdown\n" + block(item(severity="nit")) + "````\n\n"
    got = extract(PROSE + quoted + block(item()))
    assert [f.severity for f in got] == ["major"]


def test_an_invalid_severity_is_reported_with_where():
    assert refusal(PROSE + block(item(), item(severity="blocker"))) == (
        "no findings: the block at line 8 does not match findings.schema.json: "
        "findings[1].severity: 'blocker' is not one of ['critical', 'major', 'minor', 'nit']"
    )


def test_an_end_line_before_the_start_line_is_invalid():
    assert refusal(PROSE + block(item(start_line=5, end_line=3))) == (
        "no findings: the block at line 8 does not match findings.schema.json: findings[0]: "
        "end_line 3 is before start_line 5"
    )


def test_an_unknown_key_is_invalid_not_dropped():
    bad = {**item(), "confidence": 0.9}
    assert "Additional properties are not allowed ('confidence' was unexpected)" in refusal(
        PROSE + block(bad)
    )


def test_an_answer_without_a_block_says_so():
    assert refusal(PROSE) == 'no findings: the answer has no ```json block holding "findings"'


def test_an_empty_findings_list_is_no_findings_not_an_error():
    assert extract(PROSE + "```json\n" + json.dumps({"findings": []}) + "\n```\n") == []


def test_fences_are_matched_by_character_and_length():
    text = "~~~json\n{}\n```\nstill inside\n~~~\n\n`````\nx\n````\n`````\n"
    got = [(b.line, b.info, b.closed) for b in fenced_blocks(text)]
    assert got == [(1, "json", True), (7, "", True)]


def test_a_whole_answer_that_is_the_object_is_read_as_structured_output():
    answer = json.dumps({"findings": [item()]}, indent=2) + "\n"
    assert [f.severity for f in extract(answer)] == ["major"]


def test_an_unfenced_object_with_trailing_prose_is_invalid_json_not_trimmed():
    answer = json.dumps({"findings": [item()]}) + "\n\nThat is all.\n"
    assert refusal(answer) == (
        "no findings: the answer (a JSON object, as structured output gives) is not valid "
        "JSON: Extra data (answer line 3, column 1)"
    )
