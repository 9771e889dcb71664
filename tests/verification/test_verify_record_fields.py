"""The ``prompt`` check's comparison of a request record with its receipt names every field on
which they disagree, in the order the message always gave them (issue 17 rewrote it field by
field instead of through a table built per record: these pin that nothing was lost)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.records.request_record import RequestRecord
from deepseek_review.verification.record_checks import _disagreements

REVIEWS = Path(__file__).parents[1] / "fixtures" / "tampered" / "untouched" / "reviews"
STEM = "tamper_deepseek_deepseek-v4-flash_"
PRIMARY = f"reviews/{STEM}20260512T033551Z.receipt.json"
CONTINUATION = f"reviews/{STEM}continuation_20260512T033551Z.receipt.json"


def _load(rel: str) -> tuple[dict[str, Any], dict[str, Any]]:
    name = rel.removeprefix("reviews/")
    receipt = json.loads((REVIEWS / name).read_text(encoding="utf-8"))
    record = json.loads((REVIEWS / name.replace(".receipt.json", ".request.json")).read_text())
    return receipt, record


def _compare(rel: str, receipt: dict[str, Any], record: dict[str, Any]) -> str:
    return _disagreements(rel, receipt, RequestRecord.from_json(record, rel))


@pytest.mark.parametrize("rel", [PRIMARY, CONTINUATION], ids=["primary", "continuation"])
def test_a_record_that_agrees_names_nothing(rel: str) -> None:
    assert _compare(rel, *_load(rel)) == ""


RECEIPT_CHANGES = [
    (PRIMARY, "prompt_sha256", "sha256:" + "1" * 64),
    (PRIMARY, "answer_path", "reviews/other.md"),
    (PRIMARY, "created_at", "2026-05-12T03:35:52+00:00"),
    (PRIMARY, "endpoint", "http://127.0.0.1:1/v1/chat/completions"),
    (PRIMARY, "model", "other-model"),
    (PRIMARY, "usage", {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
    (PRIMARY, "context_files", ["docs/other.md"]),
    (CONTINUATION, "message_keys", ["role", "content", "reasoning_content"]),
    (CONTINUATION, "previous_answer_path", "reviews/other.md"),
]


@pytest.mark.parametrize(
    ("rel", "field", "value"), RECEIPT_CHANGES, ids=[c[1] for c in RECEIPT_CHANGES]
)
def test_each_receipt_field_the_record_disagrees_with_is_named(
    rel: str, field: str, value: Any
) -> None:
    receipt, record = _load(rel)
    receipt[field] = value
    assert _compare(rel, receipt, record) == field


def test_the_record_read_for_another_receipt_names_receipt_path_and_kind() -> None:
    receipt, _ = _load(CONTINUATION)
    _, record = _load(PRIMARY)
    got = _compare(CONTINUATION, receipt, record)
    assert got.startswith("prompt_sha256, answer_path, receipt_path, kind")


def test_several_disagreements_are_named_in_order() -> None:
    receipt, record = _load(CONTINUATION)
    receipt.update(model="m", created_at="2026-05-12T03:35:52+00:00", message_keys=["x"])
    assert _compare(CONTINUATION, receipt, record) == "created_at, model, message_keys"


def test_fields_the_record_lacks_are_not_compared() -> None:
    receipt, record = _load(PRIMARY)
    hand = copy.deepcopy(record)
    for key in ("receipt_path", "kind", "created_at", "endpoint", "context_files"):
        hand.pop(key)
    hand["body"].pop("model")
    hand["response"] = {}
    receipt.update(model="m", endpoint="http://127.0.0.1:1/", usage={})
    assert _compare(PRIMARY, receipt, hand) == ""


def test_a_server_that_reported_no_usage_must_have_zero_in_the_receipt() -> None:
    receipt, record = _load(PRIMARY)
    record["response"].update(usage=None, usage_reported=False)
    assert _compare(PRIMARY, receipt, record) == "usage"
    receipt["usage"] = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert _compare(PRIMARY, receipt, record) == ""
