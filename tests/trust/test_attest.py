"""``attest`` (issue #14): the predicate file for ``actions/attest`` over a run's reviews."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema

from tests.support.cli import review

Cli = Callable[..., Any]
ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"


def test_attest_writes_a_predicate_valid_against_its_schema_and_prints_its_type(
    repo, cli, simulator, tmp_path
):
    assert review(cli, simulator).code == 0
    out = tmp_path / "predicate.json"
    r = cli("attest", "--output", str(out))
    assert r.code == 0, r.err
    schema = json.loads((SCHEMAS / "deepseek-review-attested-reviews-v1.schema.json").read_text())
    predicate = json.loads(out.read_text())
    jsonschema.Draft202012Validator(schema).validate(predicate)
    assert r.out.strip() == schema["$id"]


def test_each_attested_review_carries_the_signed_review_predicate_and_its_files(
    repo, cli, simulator, tmp_path
):
    assert review(cli, simulator).code == 0
    out = tmp_path / "predicate.json"
    assert cli("attest", "reviews", "--output", str(out)).code == 0
    attested = json.loads(out.read_text())["reviews"][0]
    segment = json.loads((SCHEMAS / "deepseek-review-signed-review-v1.schema.json").read_text())
    jsonschema.Draft202012Validator(segment).validate(attested["predicate"])
    answer = repo / attested["predicate"]["receipt"]["answer_path"]
    assert attested["subject"][0] == {
        "name": attested["predicate"]["receipt"]["answer_path"],
        "digest": {"sha256": hashlib.sha256(answer.read_bytes()).hexdigest()},
    }


def test_attest_refuses_reviews_that_fail_verification_and_writes_nothing(
    repo, cli, simulator, tmp_path
):
    assert review(cli, simulator).code == 0
    next((repo / "reviews").glob("*Z.md")).write_text("edited\n")
    out = tmp_path / "predicate.json"
    r = cli("attest", "--output", str(out))
    assert r.code == 9
    assert r.err.startswith(
        "deepseek-review: error: 1 segment fails verification, so none is attested"
    )
    assert not out.exists()


def test_attest_without_receipts_is_an_input_error(repo, cli, tmp_path):
    r = cli("attest", "--output", str(tmp_path / "p.json"))
    assert r.code == 3
    assert (
        r.err.strip() == "deepseek-review: error: no receipts found in reviews: nothing to attest"
    )
