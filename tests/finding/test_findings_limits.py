"""A findings block is bounded (1,000 findings, each field, 1 MiB): one over a limit is
refused whole with one line naming the review and the limit, before it is parsed, and no
export or gate passes on the rest."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from deepseek_review.errors import InputError
from deepseek_review.finding.extract import MAX_BLOCK_BYTES, FindingsRefused, extract
from tests.support.findings import FROM_BLOCK, PROSE_END, answer_of, block, item, review_answering

#: A finding of ~150 bytes: 120,000 of them make the 17 MiB answer the attack used.
SMALL = item(title="t", message="m")


def many(n: int, **over: Any) -> str:
    found = json.dumps({"findings": [{**SMALL, **over}] * n}, ensure_ascii=False)
    return PROSE_END + "```json\n" + found + "\n```\n"


def test_a_17_mib_answer_of_120000_findings_is_refused_before_it_is_parsed():
    text = many(125_000)
    assert len(text) > 16 * 1024 * 1024
    body = len(text) - len(PROSE_END + "```json\n" + "\n```\n")  # the JSON inside the fence
    tracemalloc.start()
    try:
        with pytest.raises(FindingsRefused) as refused:
            extract(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024  # the answer is neither parsed, split into lines nor copied
    assert refused.value.message == (
        f"findings refused: the block at line 5 holds at least {body:,} bytes; "
        "the limit is 1,048,576 bytes (1 MiB) per review"
    )


def test_a_block_just_over_a_mib_in_utf8_is_refused_though_fewer_characters():
    n = MAX_BLOCK_BYTES // 8000 + 1
    text = many(n, message="é" * 4000)  # 2 bytes each in UTF-8
    assert len(text) < MAX_BLOCK_BYTES < len(text.encode("utf-8"))
    with pytest.raises(FindingsRefused, match=r"holds [0-9,]+ bytes; the limit is 1,048,576"):
        extract(text)


def test_structured_output_over_a_mib_is_refused():
    text = json.dumps({"findings": [{**SMALL, "message": "m" * 7000}] * 200})
    with pytest.raises(FindingsRefused, match=r"^findings refused: the answer \(a JSON object"):
        extract(text)


def test_more_than_1000_findings_are_refused_naming_the_count_and_the_limit():
    with pytest.raises(FindingsRefused) as refused:
        extract(many(1001))
    assert refused.value.message == (
        "findings refused: the block at line 5 holds 1,001 findings; the limit is 1,000 per review"
    )


def test_1000_findings_are_read():
    assert len(extract(many(1000))) == 1000


@pytest.mark.parametrize(
    ("key", "limit"),
    [("path", 1024), ("message", 8000), ("suggestion", 16000), ("title", 200), ("category", 64)],
)
def test_a_field_over_its_length_is_refused_naming_it_and_the_limit(key, limit):
    with pytest.raises(FindingsRefused) as refused:
        extract(many(1, **{key: "x" * (limit + 1)}))
    assert refused.value.message == (
        f"findings refused: the block at line 5: findings[0].{key} is longer than the "
        f"{limit:,} characters findings.schema.json allows"
    )
    assert len(extract(many(2, **{key: "x" * limit}))) == 2


def test_a_schema_error_does_not_echo_a_long_value():
    with pytest.raises(InputError) as refused:
        extract(many(1, start_line="9" * 100_000))
    assert len(refused.value.message) < 400
    assert refused.value.message.endswith("…")


def test_findings_refuses_one_review_over_the_limit_with_exit_3(repo, cli, make_stub):
    run = review_answering(cli, make_stub, [many(1001)])
    got = cli("findings", answer_of(run), "--format", "sarif", "--fail-on", "nit")
    assert (got.code, got.out) == (3, "")
    assert got.err.strip().splitlines()[-1] == (
        f"deepseek-review: error: {answer_of(run)}: findings refused: the block at line 5 "
        "holds 1,001 findings; the limit is 1,000 per review"
    )


@pytest.mark.parametrize("fail_on", [None, "critical"])
def test_a_refused_review_in_a_folder_fails_the_export_and_the_gate(repo, cli, make_stub, fail_on):
    """Listing it as a problem and exporting the others would let a gate pass on a review
    it never read."""
    good = review_answering(cli, make_stub, [PROSE_END + block(item(severity="minor"))])
    huge = review_answering(cli, make_stub, [many(1001, severity="critical")])
    assert (good.code, huge.code) == (0, 0)
    gate = ["--fail-on", fail_on] if fail_on else []
    got = cli("findings", "reviews", "--format", "github", "-o", "out.txt", *gate)
    assert got.code == 3
    assert f"error: {answer_of(huge)}: findings refused:" in got.err
    assert "the limit is 1,000 per review" in got.err
    assert not (repo / "out.txt").exists()


def test_run_findings_over_the_limit_warns_and_writes_no_findings_file(repo, cli, make_stub):
    run = review_answering(cli, make_stub, [many(1001)], *FROM_BLOCK)
    assert run.code == 0, run.err
    assert "findings refused: the block at line 5 holds 1,001 findings" in run.err
    assert not list((repo / "reviews").glob("*.findings.json"))
