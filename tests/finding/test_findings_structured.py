"""``run --findings --findings-from``: the findings extraction, a receipted request carrying
the findings schema in the server's own dialect, answered by the simulator (which honours
each dialect's schema field) and checked by ``verify`` like any other request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.finding.extract import wire_schema
from tests.support.cli import review
from tests.support.findings import assert_valid_findings_json
from tests.support.signing import signature_check, signed_review
from tests.support.sshkeys import allowed_signers, needs_openssh

CODE = ("src/pkg/mean.py",)
STRUCTURED = ("--template", "code-review", "--findings", "--findings-from", "structured")


def extract_run(cli: Any, sim: Any, *extra: str) -> Any:
    return review(cli, sim, *STRUCTURED, *extra, context=CODE)


def read(repo: Path, rel: str) -> Any:
    return json.loads((repo / rel).read_text(encoding="utf-8"))


def sent_body(repo: Path, seg: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = read(repo, seg["record_path"])["body"]
    return body


def test_the_extraction_is_its_own_receipted_request_after_the_review(repo, cli, simulator):
    run = extract_run(cli, simulator)
    assert run.code == 0, run.err
    (review_seg,) = run.json()["segments"]
    (extraction,) = run.json()["extraction"]
    assert review_seg["findings_path"] is None
    assert "/review-findings_deepseek_" in extraction["answer_path"]
    record = read(repo, extraction["record_path"])
    assert record["template"]["name"] == "findings-extraction"
    assert [f["path"] for f in record["context_files"]] == [review_seg["answer_path"]]
    path = extraction["findings_path"]
    assert record["findings"]["path"] == path
    assert read(repo, extraction["receipt_path"])["context_files"] == [review_seg["answer_path"]]


def test_the_findings_file_says_they_came_from_the_structured_reply(repo, cli, simulator):
    run = extract_run(cli, simulator)
    found = read(repo, run.json()["extraction"][0]["findings_path"])
    assert_valid_findings_json(found)
    assert found["findings_from"] == "structured"
    (finding,) = found["findings"]
    assert (finding["path"], finding["anchor"], finding["quote"]) == (
        "src/pkg/mean.py",
        "line",
        "def mean(xs):",
    )


@pytest.mark.parametrize(
    ("flags", "field", "value"),
    [
        (
            ("--server", "ollama"),
            "response_format",
            {
                "type": "json_schema",
                "json_schema": {"name": "findings", "strict": True, "schema": wire_schema()},
            },
        ),
        (
            ("--server", "vllm"),
            "response_format",
            {
                "type": "json_schema",
                "json_schema": {"name": "findings", "strict": True, "schema": wire_schema()},
            },
        ),
        (
            ("--server", "llama.cpp"),
            "response_format",
            {"type": "json_object", "schema": wire_schema()},
        ),
        (("--server", "deepseek"), "response_format", {"type": "json_object"}),
        (("--api", "ollama"), "format", wire_schema()),
    ],
    ids=["ollama", "vllm", "llama.cpp", "deepseek", "ollama-native"],
)
def test_each_server_gets_the_schema_in_its_own_dialect_and_answers_by_it(
    repo, cli, simulator, flags, field, value
):
    run = extract_run(cli, simulator, *flags)
    assert run.code == 0, run.err
    (extraction,) = run.json()["extraction"]
    assert sent_body(repo, extraction)[field] == value
    found = read(repo, extraction["findings_path"])
    assert (len(found["findings"]), found["findings_from"]) == (1, "structured")


def test_deepseek_json_mode_gets_the_schema_in_the_prompt(repo, cli, simulator):
    run = extract_run(cli, simulator, "--server", "deepseek")
    assert run.code == 0, run.err
    sent = json.loads(simulator.chat_requests()[-1].body)
    prompt = sent["messages"][-1]["content"]
    assert json.dumps(wire_schema(), separators=(",", ":"), sort_keys=True) in prompt
    assert "JSON" in prompt  # DeepSeek's JSON mode needs the word in the prompt


@pytest.mark.parametrize(
    ("flags", "off"),
    [
        (("--server", "ollama", "--reasoning", "high"), {"reasoning_effort": "none"}),
        (("--server", "deepseek"), {"thinking": {"type": "disabled"}}),
        (("--server", "vllm"), {"chat_template_kwargs": {"enable_thinking": False}}),
        (("--api", "ollama", "--reasoning", "high"), {"think": False}),
    ],
    ids=["ollama", "deepseek", "vllm", "ollama-native"],
)
def test_the_extraction_is_sent_with_reasoning_off(repo, cli, make_simulator, flags, off):
    run = extract_run(cli, make_simulator(reasoning_words=3), *flags)
    assert run.code == 0, run.err
    body = sent_body(repo, run.json()["extraction"][0])
    assert {k: body.get(k) for k in off} == off


def test_verify_strict_rebuilds_the_extraction_and_re_derives_its_findings(repo, cli, simulator):
    run = extract_run(cli, simulator)
    got = cli("verify", "--strict", "--json")
    assert got.code == 0, got.err
    by_path = {r["receipt_path"]: r for r in got.json()["receipts"]}
    checks = by_path[run.json()["extraction"][0]["receipt_path"]]["checks"]
    answer = next(c for c in checks if c["name"] == "answer")
    assert answer["detail"] == (
        "hash matches; findings file (version 2) re-derived from the answer: identical"
    )


def test_verify_fails_an_extraction_findings_file_forged_with_its_hash(repo, cli, simulator):
    from tests.support.builders import sha

    run = extract_run(cli, simulator)
    (extraction,) = run.json()["extraction"]
    path = repo / extraction["findings_path"]
    forged = path.read_bytes().replace(b'"minor"', b'"nit"').replace(b'"major"', b'"nit"')
    forged = forged.replace(b'"critical"', b'"nit"')
    path.write_bytes(forged)
    record_path = repo / extraction["record_path"]
    record = read(repo, extraction["record_path"])
    record["findings"]["sha256"] = sha(forged)
    record_path.write_text(json.dumps(record), encoding="utf-8")
    got = cli("verify")
    assert got.code == 9
    assert "is not what the answer gives (re-derived findings differ)" in got.err


def test_wrong_line_numbers_in_the_extracted_findings_are_corrected_by_their_quotes(
    repo, cli, make_simulator
):
    sim = make_simulator(findings_line_offset=7)
    run = extract_run(cli, sim)
    (finding,) = read(repo, run.json()["extraction"][0]["findings_path"])["findings"]
    assert (finding["start_line"], finding["lines"], finding["quote_match"]) == (
        8,
        {"start": 1, "end": 1},
        "exact",
    )


def test_a_reply_that_does_not_validate_is_asked_once_more(repo, cli, make_simulator):
    sim = make_simulator(structured_faults=["invalid"])
    run = extract_run(cli, sim)
    assert run.code == 0, run.err
    first, second = run.json()["extraction"]
    assert first["findings_path"] is None
    assert read(repo, second["findings_path"])["findings_from"] == "structured"
    assert (
        f"{first['answer_path']}: no findings: the extraction's answer does not match the "
        "schema it was sent"
    ) in run.err
    assert "asking once more" in run.err


def test_two_replies_that_do_not_validate_fail_the_run_with_exit_6(repo, cli, make_simulator):
    sim = make_simulator(structured_faults=["not-json", "invalid"])
    run = extract_run(cli, sim)
    assert run.code == 6
    last = run.err.strip().splitlines()[-1]
    assert "the findings extraction's answer did not validate twice" in last
    assert not list((repo / "reviews").glob("*.findings.json"))
    assert len(list((repo / "reviews").glob("review-findings_*.receipt.json"))) == 2


def test_auto_falls_back_to_the_block_and_says_so(repo, cli, make_simulator):
    sim = make_simulator(structured_faults=["ignore", "ignore"])  # as Ollama's cloud does
    run = review(cli, sim, "--template", "code-review", "--findings", context=CODE)
    assert run.code == 0, run.err
    extraction = run.json()["extraction"]
    found = read(repo, extraction[-1]["findings_path"])
    assert found["findings_from"] == "block"
    assert len(found["findings"]) == 1
    assert "the findings are taken from the review's block" in run.err
    assert cli("verify", "--strict").code == 0


def test_a_blank_reply_is_retried_by_the_client_and_not_written(repo, cli, make_simulator):
    sim = make_simulator(structured_faults=["blank"])
    run = extract_run(cli, sim, "--server", "deepseek")
    assert run.code == 0, run.err
    (extraction,) = run.json()["extraction"]
    assert extraction["attempts"] == 2
    assert read(repo, extraction["findings_path"])["findings_from"] == "structured"


def test_auto_on_deepseek_reads_the_block_without_an_extraction(repo, cli, simulator):
    run = review(
        cli, simulator, "--template", "code-review", "--findings", "--server", "deepseek",
        context=CODE,
    )  # fmt: skip
    assert run.code == 0, run.err
    assert "extraction" not in run.json()
    assert read(repo, run.json()["segments"][-1]["findings_path"])["findings_from"] == "block"


def test_block_reads_the_answer_as_before(repo, cli, simulator):
    run = review(cli, simulator, "--template", "code-review", "--findings-from", "block",
                 "--findings", context=CODE)  # fmt: skip
    assert run.code == 0, run.err
    assert "extraction" not in run.json()


def test_findings_reads_an_extraction_anchored_in_the_reviewed_files(repo, cli, simulator):
    run = extract_run(cli, simulator)
    got = cli("findings", "--format", "json", run.json()["extraction"][0]["receipt_path"])
    assert got.code == 0, got.err
    (finding,) = json.loads(got.out)["findings"]
    assert (finding["anchor"], finding["review"]) == (
        "line",
        run.json()["segments"][-1]["answer_path"],
    )


def test_a_folder_counts_a_review_by_its_extraction_alone(repo, cli, make_simulator):
    sim = make_simulator(findings_line_offset=40)  # the block's lines: nowhere in the file
    extract_run(cli, sim)
    got = cli("findings", "--format", "json", "reviews")
    assert got.code == 0, got.err
    data = json.loads(got.out)
    assert [f["quote_match"] for f in data["findings"]] == ["exact"]
    assert data["problems"] == []


def test_a_retried_extraction_is_no_problem_for_the_gate(repo, cli, make_simulator):
    sim = make_simulator(structured_faults=["invalid"])
    extract_run(cli, sim)
    got = cli("findings", "--format", "json", "--fail-on", "critical", "reviews")
    assert json.loads(got.out)["problems"] == []
    assert got.code in (0, 13)
    assert "the gate cannot pass" not in got.err


def test_two_failed_extractions_and_a_broken_block_leave_the_gate_unpassable(
    repo, cli, make_simulator
):
    sim = make_simulator(structured_faults=["invalid", "invalid"])
    run = review(
        cli, sim, "--findings", "--findings-from", "structured", "--template", "default",
        context=CODE,
    )  # fmt: skip
    assert run.code == 6
    got = cli("findings", "--format", "json", "--fail-on", "critical", "reviews")
    assert got.code == 13
    assert "the gate cannot pass" in got.err
    assert "the extraction's answer does not match the schema it was sent" in got.err


@needs_openssh
def test_sign_signs_the_extraction_and_verify_checks_its_signature(
    repo, cli, simulator, tmp_path, alice
):
    out = signed_review(cli, simulator, alice, *STRUCTURED)
    (extraction,) = out["extraction"]
    assert extraction["signature_path"] is not None
    signers = allowed_signers(tmp_path / "allowed", alice.allowed_line())
    got = cli("verify", "--allowed-signers", str(signers), "--require-signature", "--json",
              extraction["receipt_path"])  # fmt: skip
    assert got.code == 0, got.err
    assert signature_check(got)["status"] == "ok"


def test_the_operator_cap_counts_the_extraction_before_anything_is_sent(repo, cli, make_simulator):
    sim = make_simulator(answer_words=20)
    cap = ("--max-tokens", "100", "--max-continuations", "0", "--max-run-tokens", "1500")
    assert review(cli, sim, "--findings-from", "block", "--findings", *cap).code == 0
    run = extract_run(cli, sim, *cap)
    assert run.code == 2, run.err
    assert "--max-run-tokens 1500: the review and its findings extraction may use up to" in run.err
    assert len(sim.chat_requests()) == 1  # the first review's; nothing more was sent


def test_a_topic_too_long_for_its_extraction_is_refused_before_sending(repo, cli, simulator):
    run = extract_run(cli, simulator, "--topic", "t" * 115)
    assert run.code == 2
    assert f"--topic '{'t' * 115}': too long for its findings extraction's topic" in run.err
    assert simulator.chat_requests() == []


JSON_SCHEMA = {
    "type": "json_schema",
    "json_schema": {"name": "findings", "strict": True, "schema": wire_schema()},
}


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("ollama", JSON_SCHEMA),
        ("llama.cpp", {"type": "json_object", "schema": wire_schema()}),
        ("vllm", JSON_SCHEMA),
        ("other", JSON_SCHEMA),
    ],
)
def test_a_server_not_declared_gets_the_dialect_of_the_kind_it_answers_as(
    repo, cli, make_simulator, kind, value
):
    sim = make_simulator(server_kind=kind)
    run = review(cli, sim, "--template", "code-review", "--findings", context=CODE)
    assert run.code == 0, run.err
    (extraction,) = run.json()["extraction"]
    assert sent_body(repo, extraction)["response_format"] == value
    assert read(repo, extraction["findings_path"])["findings_from"] == "structured"


def test_a_llama_cpp_python_server_not_declared_gets_llama_cpps_dialect(repo, cli, make_simulator):
    sim = make_simulator(server_kind="other", tokenizer="llama-cpp-python")  # no /props
    run = review(cli, sim, "--template", "code-review", "--findings", context=CODE)
    assert run.code == 0, run.err
    body = sent_body(repo, run.json()["extraction"][0])
    assert body["response_format"] == {"type": "json_object", "schema": wire_schema()}


def test_a_vllm_server_not_declared_gets_its_own_reasoning_off_field(repo, cli, make_simulator):
    sim = make_simulator(server_kind="vllm")
    run = review(cli, sim, "--template", "code-review", "--findings", context=CODE)
    body = sent_body(repo, run.json()["extraction"][0])
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_a_declared_server_is_not_asked_what_it_is(repo, cli, make_simulator):
    sim = make_simulator(server_kind="llama.cpp")
    run = extract_run(cli, sim, "--server", "vllm")
    assert run.code == 0, run.err
    assert sent_body(repo, run.json()["extraction"][0])["response_format"] == JSON_SCHEMA
    asked = {r.path for r in sim.requests if r.method == "GET"}
    assert not asked & {"/props", "/version", "/api/version"}


def test_the_server_kind_is_asked_once_for_the_extraction_and_the_self_check(
    repo, cli, make_simulator
):
    sim = make_simulator(server_kind="llama.cpp")
    run = review(cli, sim, "--template", "code-review", "--findings", "--self-check",
                 context=CODE)  # fmt: skip
    assert run.code == 0, run.err
    assert sent_body(repo, run.json()["self_check"][0])["response_format"]["type"] == "json_object"
    assert [r.path for r in sim.requests if r.path == "/props"] == ["/props"]


def test_auto_takes_the_block_when_the_extraction_is_cut_off_at_the_token_cap(
    repo, cli, make_simulator
):
    sim = make_simulator()  # the review's prose fills its first segment; the block is whole
    cap = ("--max-tokens", "20", "--continuation-max-tokens", "4000")  # in the next one
    run = review(cli, sim, "--template", "code-review", "--findings", *cap, context=CODE)
    assert run.code == 0, run.err
    first, second = run.json()["extraction"]
    assert (first["finish_reason"], second["finish_reason"]) == ("length", "length")
    found = read(repo, second["findings_path"])
    assert (found["findings_from"], len(found["findings"])) == ("block", 1)
    assert (
        f"{second['answer_path']}: cut off at the token cap; the findings are taken from the "
        "review's block"
    ) in run.err
    got = cli("verify", "--json", second["receipt_path"])
    checks = {c["name"]: c for c in got.json()["receipts"][0]["checks"]}
    assert checks["answer"]["detail"].endswith("re-derived from the answer: identical")


@pytest.mark.parametrize("kind", ["receipt_path", "answer_path"])
def test_findings_on_a_reviews_own_file_reads_its_extraction_as_the_folder_does(
    repo, cli, make_simulator, kind
):
    sim = make_simulator(findings_line_offset=40)  # the block's lines: nowhere in the file
    run = extract_run(cli, sim)
    got = cli("findings", "--format", "json", run.json()["segments"][-1][kind])
    assert got.code == 0, got.err
    assert [f["quote_match"] for f in json.loads(got.out)["findings"]] == ["exact"]
    assert got.out == cli("findings", "--format", "json", "reviews").out


def test_findings_on_a_reviews_own_file_reads_its_self_check(repo, cli, make_simulator):
    sim = make_simulator(answer_words=20)
    run = review(cli, sim, "--template", "code-review", "--findings", "--self-check",
                 "--self-check-threshold", "10", context=CODE)  # fmt: skip
    assert run.code == 0, run.err
    checked = read(repo, run.json()["self_check"][0]["findings_path"])
    assert checked["self_check"]["dropped"]  # the simulator scores its one finding under 10
    got = cli("findings", "--format", "json", run.json()["segments"][-1]["answer_path"])
    assert got.code == 0, got.err
    assert json.loads(got.out)["findings"] == checked["findings"] == []
    assert got.out == cli("findings", "--format", "json", "reviews").out


def test_continue_with_findings_extracts_them_once_the_chain_is_complete(repo, cli, simulator):
    cut = ("--max-tokens", "60", "--max-continuations", "0")  # the prose alone: cut off
    first = review(cli, simulator, "--template", "code-review", "--findings", *cut, context=CODE)
    assert first.json()["status"] == "truncated"
    assert "extraction" not in first.json()  # a chain still cut off: nothing to extract
    answer = first.json()["segments"][-1]["answer_path"]
    got = cli("continue", answer, "--findings", "--continuation-max-tokens", "4000", "--json")
    assert got.code == 0, got.err
    (extraction,) = got.json()["extraction"]
    found = read(repo, extraction["findings_path"])
    assert (found["findings_from"], len(found["findings"])) == ("structured", 1)
    record = read(repo, extraction["record_path"])
    answers = [s["answer_path"] for s in got.json()["segments"]]
    assert [f["path"] for f in record["context_files"]] == answers
    assert cli("verify", "--strict").code == 0


def test_continue_without_findings_makes_none(repo, cli, simulator):
    cut = ("--max-tokens", "60", "--max-continuations", "0")
    first = review(cli, simulator, "--template", "code-review", "--findings", *cut, context=CODE)
    answer = first.json()["segments"][-1]["answer_path"]
    got = cli("continue", answer, "--continuation-max-tokens", "4000", "--json")
    assert got.code == 0, got.err
    assert "extraction" not in got.json()
    assert list((repo / "reviews").glob("*.findings.json")) == []


def test_continue_with_findings_from_block_writes_them_beside_the_last_segment(
    repo, cli, simulator
):
    cut = ("--max-tokens", "60", "--max-continuations", "0")
    first = review(cli, simulator, "--template", "code-review", "--findings", *cut, context=CODE)
    answer = first.json()["segments"][-1]["answer_path"]
    got = cli("continue", answer, "--findings", "--findings-from", "block",
              "--continuation-max-tokens", "4000", "--json")  # fmt: skip
    assert got.code == 0, got.err
    assert "extraction" not in got.json()
    last = got.json()["segments"][-1]
    assert read(repo, last["findings_path"])["findings_from"] == "block"
