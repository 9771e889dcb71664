"""``run --findings --self-check``: one more receipted request scores each finding 0-10;
those under ``--self-check-threshold`` are dropped from the findings file written beside it
(kept there, with every score), ``verify`` re-derives it and ``findings`` honours it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deepseek_review.finding.self_check import SCORES_SCHEMA
from deepseek_review.testing.simulator.structured import score_of
from tests.support.cli import review
from tests.support.findings import assert_valid_findings_json

CODE = ("src/pkg/mean.py",)
CHECKED = ("--findings", "--self-check")


def read(repo: Path, rel: str) -> Any:
    return json.loads((repo / rel).read_text(encoding="utf-8"))


def checked_run(cli: Any, sim: Any, *extra: str, template: str = "code-review") -> Any:
    run = review(cli, sim, *CHECKED, "--template", template, *extra, context=CODE)
    assert run.code == 0, run.err
    return run


def over_the_score(cli: Any, sim: Any, repo: Path) -> tuple[dict[str, Any], str]:
    """The simulator's one finding (from a first run) and a threshold over its score."""
    finding = the_finding(repo, checked_run(cli, sim, "--self-check-threshold", "0"))
    score = score_of(finding["fingerprint"])
    assert score < 10, "the simulator's score of this finding leaves room above it"
    return finding, str(score + 1)


def the_finding(repo: Path, run: Any) -> dict[str, Any]:
    (finding,) = read(repo, run.json()["extraction"][-1]["findings_path"])["findings"]
    return dict(finding)


def test_findings_scored_under_the_threshold_are_dropped_and_every_score_kept(repo, cli, simulator):
    finding, threshold = over_the_score(cli, simulator, repo)
    run = checked_run(cli, simulator, "--self-check-threshold", threshold)
    (check,) = run.json()["self_check"]
    found = read(repo, check["findings_path"])
    assert_valid_findings_json(found)
    assert found["findings"] == []
    assert sum(found["counts"].values()) == 0
    fingerprint = finding["fingerprint"]
    assert found["self_check"]["threshold"] == int(threshold)
    assert found["self_check"]["scores"] == {fingerprint: score_of(fingerprint)}
    assert [f["fingerprint"] for f in found["self_check"]["dropped"]] == [fingerprint]


def test_a_finding_scored_at_the_threshold_stays(repo, cli, simulator):
    finding = the_finding(repo, checked_run(cli, simulator, "--self-check-threshold", "0"))
    run = checked_run(
        cli, simulator, "--self-check-threshold", str(score_of(finding["fingerprint"]))
    )
    found = read(repo, run.json()["self_check"][0]["findings_path"])
    assert [f["fingerprint"] for f in found["findings"]] == [finding["fingerprint"]]
    assert found["self_check"]["dropped"] == []


def test_the_self_check_is_a_receipted_request_on_the_findings_file(repo, cli, simulator):
    run = checked_run(cli, simulator, "--server", "vllm")
    (check,) = run.json()["self_check"]
    record = read(repo, check["record_path"])
    assert record["template"]["name"] == "findings-self-check"
    source = run.json()["extraction"][-1]["findings_path"]
    assert [f["path"] for f in record["context_files"]] == [source]
    assert record["body"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "scores", "strict": True, "schema": SCORES_SCHEMA},
    }
    assert record["body"]["chat_template_kwargs"] == {"enable_thinking": False}


def test_verify_strict_re_derives_the_self_checked_findings(repo, cli, simulator):
    run = checked_run(cli, simulator, "--self-check-threshold", "0")
    got = cli("verify", "--strict", "--json", run.json()["self_check"][0]["receipt_path"])
    assert got.code == 0, got.err
    (receipt,) = got.json()["receipts"]
    answer = next(c for c in receipt["checks"] if c["name"] == "answer")
    assert answer["detail"].endswith("re-derived from the answer: identical")


def test_verify_fails_a_self_check_file_whose_threshold_was_lowered(repo, cli, simulator):
    from tests.support.builders import sha

    _, threshold = over_the_score(cli, simulator, repo)
    run = checked_run(cli, simulator, "--self-check-threshold", threshold)
    (check,) = run.json()["self_check"]
    path = repo / check["findings_path"]
    forged = path.read_bytes().replace(f'"threshold": {threshold}'.encode(), b'"threshold": 0')
    assert forged != path.read_bytes()
    path.write_bytes(forged)
    record = read(repo, check["record_path"])
    record["findings"]["sha256"] = sha(forged)
    (repo / check["record_path"]).write_text(json.dumps(record), encoding="utf-8")
    got = cli("verify", check["receipt_path"])
    assert got.code == 9
    assert "is not what the answer gives (re-derived findings differ)" in got.err


def test_findings_leaves_out_what_the_self_check_dropped(repo, cli, simulator, tmp_path):
    _, threshold = over_the_score(cli, simulator, repo)
    (repo / "reviews").rename(tmp_path / "first")
    checked_run(cli, simulator, "--self-check-threshold", threshold)
    got = cli("findings", "--format", "json", "--fail-on", "nit", "reviews")
    assert got.code == 0, got.err
    data = json.loads(got.out)
    assert (data["findings"], data["problems"]) == ([], [])


def test_a_self_check_that_does_not_validate_twice_leaves_the_findings_unchecked(
    repo, cli, make_simulator
):
    sim = make_simulator(structured_faults=["not-json", "invalid"])
    run = checked_run(cli, sim, "--findings-from", "block")
    assert len(run.json()["self_check"]) == 2
    assert all(s["findings_path"] is None for s in run.json()["self_check"])
    assert "the self-check did not validate twice" in run.err
    found = read(repo, run.json()["segments"][-1]["findings_path"])
    assert len(found["findings"]) == 1
    assert cli("verify", "--strict").code == 0


def test_findings_without_any_finding_send_no_self_check(repo, cli, simulator):
    run = checked_run(cli, simulator, "--findings-from", "structured", template="default")
    assert "self_check" not in run.json()
    assert len(simulator.chat_requests()) == 2  # the review and its extraction
