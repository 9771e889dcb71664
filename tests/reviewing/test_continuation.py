"""Truncated reviews continue themselves: chains, seams, caps, and what each request carries.

What a continuation request carries and how its answer is read differ by chat API, so those
tests run over both (``both_apis``); naming, caps and the files written run once."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from deepseek_review.records.canonical import canonical_json, sha256_tag
from deepseek_review.records.rebuild import rebuild_body, repo_reader
from deepseek_review.testing.simulator import full_answer
from deepseek_review.util.resources import schema_path
from tests.support.cli import review

SCHEMA = json.loads(schema_path().read_text(encoding="utf-8"))
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)


def segments(result: Any) -> list[dict[str, Any]]:
    segs: list[dict[str, Any]] = result.json()["segments"]
    return segs


def read(repo: Path, rel: str) -> str:
    return (repo / rel).read_text(encoding="utf-8")


def receipt(repo: Path, seg: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read(repo, seg["receipt_path"]))
    return data


def primary_messages(sim: Any) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = json.loads(sim.chat_requests()[0].body)["messages"]
    return messages


def stitched(repo: Path, segs: list[dict[str, Any]]) -> str:
    return "".join(read(repo, s["answer_path"]) for s in segs)


# --------------------------------------------------------------------------- chains


def test_answer_within_the_cap_makes_no_continuation(repo, make_simulator, cli):
    sim = make_simulator(answer_words=30)
    r = review(cli, sim, "--max-tokens", "100")
    assert r.code == 0, r.err
    assert len(segments(r)) == 1
    assert len(sim.chat_requests()) == 1
    assert r.json()["finish_reason"] == "stop"


@pytest.mark.usefixtures("both_apis")
def test_one_continuation_completes_a_cut_off_answer(repo, make_simulator, cli):
    sim = make_simulator(answer_words=30)
    r = review(cli, sim, "--max-tokens", "20")
    assert r.code == 0, r.err
    segs = segments(r)
    assert [s["finish_reason"] for s in segs] == ["length", "stop"]
    assert r.json()["status"] == "ok"


@pytest.mark.usefixtures("both_apis")
def test_three_continuations_link_each_segment_to_the_one_before(repo, make_simulator, cli):
    sim = make_simulator(answer_words=80)
    r = review(cli, sim, "--max-tokens", "20")
    assert r.code == 0, r.err
    segs = segments(r)
    assert len(segs) == 4
    receipts = [receipt(repo, s) for s in segs]
    assert receipts[0]["schema"] == "ollama_deepseek_review_receipt_v1"
    for prev, cont in itertools.pairwise(receipts):
        assert cont["schema"] == "ollama_deepseek_review_continuation_receipt_v1"
        assert cont["previous_answer_path"] == prev["answer_path"]


@pytest.mark.usefixtures("both_apis")
@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_stitched_chain_equals_the_full_answer(repo, make_simulator, cli, stream):
    sim = make_simulator(answer_words=75)
    r = review(cli, sim, "--max-tokens", "20", stream)
    assert r.code == 0, r.err
    segs = segments(r)
    assert len(segs) == 4
    assert stitched(repo, segs) == full_answer(primary_messages(sim), words=75)


@pytest.mark.usefixtures("both_apis")
def test_stitched_chain_keeps_non_ascii_text_intact_at_every_seam(repo, make_simulator, cli):
    sim = make_simulator(answer_words=200)
    r = review(cli, sim, "--max-tokens", "7", "--max-continuations", "40")
    assert r.code == 0, r.err
    full = full_answer(primary_messages(sim), words=200)
    assert any(ord(c) > 127 for c in full)
    assert stitched(repo, segments(r)) == full


def test_continuation_receipts_validate_and_hold_no_context_files(repo, make_simulator, cli):
    sim = make_simulator(answer_words=50)
    r = review(cli, sim, "--max-tokens", "20")
    for seg in segments(r):
        data = receipt(repo, seg)
        assert list(VALIDATOR.iter_errors(data)) == []
        if data["schema"].endswith("continuation_receipt_v1"):
            assert "context_files" not in data
            assert data["message_keys"] == ["role", "content"]


def test_continuation_files_are_named_as_the_seed_repository_names_them(repo, make_simulator, cli):
    sim = make_simulator(answer_words=30)
    r = review(cli, sim, "--max-tokens", "20", "--topic", "spec_check")
    primary, cont = segments(r)
    assert Path(primary["answer_path"]).name.startswith("spec_check_deepseek_deepseek-v4-flash_2")
    assert Path(cont["answer_path"]).name.startswith(
        "spec_check_deepseek_deepseek-v4-flash_continuation_2"
    )


@pytest.mark.usefixtures("both_apis")
def test_every_segment_has_a_record_that_rebuilds_its_prompt_sha256(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    r = review(cli, sim, "--max-tokens", "20")
    received = {sha256_tag(req.body) for req in sim.chat_requests()}
    for seg in segments(r):
        record = json.loads(read(repo, seg["record_path"]))
        rebuilt = rebuild_body(record["body"], repo_reader(repo))
        assert rebuilt.body_bytes is not None
        assert sha256_tag(rebuilt.body_bytes) == seg["prompt_sha256"]
        assert seg["prompt_sha256"] in received


# --------------------------------------------------------------------------- the requests


def _messages_slice(body: bytes) -> bytes:
    """The canonical bytes of a body's messages array, found in the body itself."""
    messages = json.loads(body)["messages"]
    encoded = canonical_json(messages)
    assert encoded in body
    return encoded


@pytest.mark.usefixtures("both_apis")
def test_continuation_repeats_the_primary_messages_byte_for_byte(repo, make_simulator, cli):
    sim = make_simulator(answer_words=50)
    review(cli, sim, "--max-tokens", "20")
    first, *rest = sim.chat_requests()
    primary = _messages_slice(first.body)
    assert rest
    for req in rest:
        # The primary messages, unchanged, then more: "[M1,M2" is a byte prefix of "[M1,M2,A".
        assert _messages_slice(req.body).startswith(primary[:-1] + b",")


@pytest.mark.usefixtures("both_apis")
def test_prefill_continuation_ends_with_the_answer_so_far_as_assistant(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    r = review(cli, sim, "--max-tokens", "20")
    segs = segments(r)
    third = json.loads(sim.chat_requests()[2].body)["messages"]
    assert third[-1] == {"role": "assistant", "content": stitched(repo, segs[:2])}


@pytest.mark.usefixtures("both_apis")
def test_directive_style_adds_the_continuation_directive_as_a_user_message(
    repo, make_simulator, cli
):
    sim = make_simulator(answer_words=30)
    r = review(cli, sim, "--max-tokens", "20", "--continuation-style", "directive")
    assert r.code == 0, r.err
    messages = json.loads(sim.chat_requests()[1].body)["messages"]
    assert [m["role"] for m in messages][-2:] == ["assistant", "user"]
    assert messages[-1]["content"].startswith("Your previous answer was cut off")
    assert stitched(repo, segments(r)) == full_answer(primary_messages(sim), words=30)


@pytest.mark.usefixtures("both_apis")
def test_echoed_prefill_is_kept_out_of_the_new_segment(repo, make_simulator, cli):
    sim = make_simulator(answer_words=50, echo_prefill=True)
    r = review(cli, sim, "--max-tokens", "20")
    assert r.code == 0, r.err
    segs = segments(r)
    assert stitched(repo, segs) == full_answer(primary_messages(sim), words=50)
    record = json.loads(read(repo, segs[1]["record_path"]))
    assert record["response"]["echo_stripped_chars"] == len(read(repo, segs[0]["answer_path"]))


@pytest.mark.usefixtures("both_apis")
def test_continuation_can_use_another_model_and_token_cap(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    r = review(
        cli,
        sim,
        "--max-tokens",
        "20",
        "--continuation-model",
        "deepseek-v4-pro",
        "--continuation-max-tokens",
        "100",
    )
    assert r.code == 0, r.err
    primary, cont = segments(r)
    assert receipt(repo, primary)["model"] == "deepseek-v4-flash"
    assert receipt(repo, cont)["model"] == "deepseek-v4-pro"
    body = json.loads(sim.chat_requests()[1].body)
    assert (body["model"], body["max_tokens"]) == ("deepseek-v4-pro", 100)
    assert "_deepseek_deepseek-v4-pro_continuation_" in cont["answer_path"]


@pytest.mark.usefixtures("both_apis")
@pytest.mark.parametrize("both_apis", ["openai"], indirect=True)  # presets are /v1's
@pytest.mark.parametrize(
    ("server", "body_fields", "message_fields"),
    [
        ("vllm", {"continue_final_message": True, "add_generation_prompt": False}, {}),
        ("deepseek", {}, {"prefix": True}),
        ("ollama", {}, {}),
    ],
)
def test_server_preset_adds_its_prefill_fields_to_continuations_only(
    repo, make_simulator, cli, server, body_fields, message_fields
):
    sim = make_simulator(answer_words=30)
    r = review(cli, sim, "--max-tokens", "20", "--server", server)
    assert r.code == 0, r.err
    first, second = (json.loads(req.body) for req in sim.chat_requests())
    for key, value in body_fields.items():
        assert key not in first
        assert second[key] == value
    last = second["messages"][-1]
    assert {k: v for k, v in last.items() if k not in ("role", "content")} == message_fields


@pytest.mark.usefixtures("both_apis")
def test_reasoning_that_used_the_whole_budget_is_continued(repo, make_simulator, cli):
    sim = make_simulator(answer_words=20, reasoning_words=30)
    r = review(cli, sim, "--max-tokens", "25", "--continuation-max-tokens", "200")
    assert r.code == 0, r.err
    primary, cont = segments(r)
    assert primary["finish_reason"] == "length"
    assert read(repo, primary["answer_path"]) == ""
    assert receipt(repo, cont)["message_keys"] == ["role", "content", "reasoning"]
    assert read(repo, cont["answer_path"]) == full_answer(primary_messages(sim), words=20)


# --------------------------------------------------------------------------- caps


def test_cap_reached_exits_4_naming_the_last_answer_and_the_continue_command(
    repo, make_simulator, cli
):
    sim = make_simulator(answer_words=100)
    r = review(cli, sim, "--max-tokens", "10", "--max-continuations", "2")
    assert r.code == 4
    segs = segments(r)
    assert len(segs) == 3
    assert r.json()["status"] == "truncated"
    last = segs[-1]["answer_path"]
    error_lines = [line for line in r.err.splitlines() if "error:" in line]
    assert len(error_lines) == 1
    assert "still truncated" in error_lines[0]
    assert f"deepseek-review continue {last}" in error_lines[0]


def test_zero_max_continuations_disables_continuing(repo, make_simulator, cli):
    sim = make_simulator(answer_words=100)
    r = review(cli, sim, "--max-tokens", "10", "--max-continuations", "0")
    assert r.code == 4
    assert "the review is still truncated after 0 continuations" in r.err
    assert len(sim.chat_requests()) == 1


def test_negative_max_continuations_is_refused(repo, simulator, cli):
    r = review(cli, simulator, "--max-continuations", "-1")
    assert r.code == 2
    assert "--max-continuations" in r.err
    assert simulator.chat_requests() == []
