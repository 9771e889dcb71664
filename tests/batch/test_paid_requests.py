"""Never waste a paid request: what a user hit in the first hour, made impossible.

Each test reproduces one class of defect against the simulator (with the knobs that imitate
llama.cpp and thinking models) and asserts what the user sees: the exit code, the one error
line, and how many requests the server received.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator, full_answer
from tests.support.batch import batch, manifest, statuses
from tests.support.chat import (
    MESSAGES,
    answers,
    chat,
    primary_messages,
    refused,
)
from tests.support.cli import CliResult, files_under, review

Cli = Callable[..., CliResult]
MakeSim = Callable[..., Simulator]


# --------------------------------------------------------------------------- the simulator's knobs


def test_simulator_llama_stream_of_an_empty_answer_is_one_finish_chunk(
    make_simulator: MakeSim,
) -> None:
    sim = make_simulator(answer_words=4, llama_stream=True)
    so_far = full_answer(MESSAGES, words=4)
    messages = [*MESSAGES, {"role": "assistant", "content": so_far}]
    events = chat(sim, messages=messages, stream=True).events()
    assert events[-1] == "[DONE]"
    assert [e["choices"] for e in events[:-1]] == [
        [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    ]


def test_simulator_end_token_makes_an_answer_that_fills_the_cap_end_with_length(
    make_simulator: MakeSim,
) -> None:
    sim = make_simulator(answer_words=4, end_token=True)
    body = chat(sim, max_tokens=4).json()
    assert body["choices"][0]["message"]["content"] == full_answer(MESSAGES, words=4)
    assert body["choices"][0]["finish_reason"] == "length"


# --------------------------------------------------------------------------- 1. empty final chunk


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_an_empty_last_segment_that_ends_with_stop_finishes_the_chain(
    repo: Path, make_simulator: MakeSim, cli: Cli, stream: str
) -> None:
    """llama.cpp, answer length an exact multiple of the cap: the last reply is empty + stop."""
    sim = make_simulator(answer_words=12, llama_stream=True, end_token=True, omit_usage=True)
    r = review(cli, sim, stream, "--max-tokens", "4", "--max-continuations", "40")
    assert r.code == 0, r.err
    segs = r.json()["segments"]
    assert [s["finish_reason"] for s in segs] == ["length", "length", "length", "stop"]
    assert [s["attempts"] for s in segs] == [1, 1, 1, 1]
    assert len(sim.chat_requests()) == 4
    assert answers(repo, r)[-1] == ""
    assert "".join(answers(repo, r)) == full_answer(primary_messages(sim), words=12)


def test_a_chain_ending_with_an_empty_segment_verifies_and_shows_whole(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(answer_words=8, llama_stream=True, end_token=True)
    r = review(cli, sim, "--max-tokens", "4")
    assert r.code == 0, r.err
    assert answers(repo, r)[-1] == ""
    assert cli("verify", "--strict").code == 0
    shown = cli("show", r.json()["segments"][0]["answer_path"])
    assert shown.code == 0, shown.err
    assert shown.out == full_answer(primary_messages(sim), words=8)


def test_a_stream_of_only_a_finish_chunk_is_an_empty_answer_not_a_retry(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(answer_words=4, llama_stream=True, end_token=True)
    r = review(cli, sim, "--max-tokens", "4", "--max-attempts", "5")
    assert r.code == 0, r.err
    bodies = [json.loads(q.body) for q in sim.chat_requests()]
    assert len(bodies) == 2
    assert r.json()["finish_reason"] == "stop"
    assert "attempt" not in r.err


def test_a_stream_whose_deltas_carry_no_text_field_is_still_refused(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    """The empty answer is accepted; a message in a shape we cannot read is not."""
    sim = make_simulator(fault_rate=1.0, fault_kinds=("content-missing",))
    r = review(cli, sim, "--max-attempts", "1")
    refused(r, 6, "stream carried no message content")


# --------------------------------------------------------------------------- 2. no progress


def test_reasoning_that_eats_every_cap_stops_after_the_first_request(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(answer_words=30, reasoning_words=50)
    r = review(cli, sim, "--max-tokens", "20", "--max-continuations", "10")
    refused(r, 12, "too small for the model's", "--continuation-max-tokens", "--max-tokens")
    assert len(sim.chat_requests()) == 1
    assert r.json()["status"] == "truncated" and r.json()["stalled"] is True
    assert len(r.json()["segments"]) == 1


def test_no_progress_advice_raises_the_cap_so_it_cannot_loop(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(answer_words=30, reasoning_words=50)
    r = review(cli, sim, "--max-tokens", "20")
    last = r.json()["segments"][-1]["answer_path"]
    refused(r, 12, f"deepseek-review continue {last} --continuation-max-tokens 40")
    follow = cli("continue", last, "--continuation-max-tokens", "100", "--json")
    assert follow.code == 0, follow.err
    assert len(sim.chat_requests()) == 2


def test_continue_on_a_chain_that_made_no_progress_sends_nothing_at_the_same_cap(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(answer_words=30, reasoning_words=50)
    first = review(cli, sim, "--max-tokens", "20")
    assert first.code == 12
    last = first.json()["segments"][-1]["answer_path"]
    r = cli("continue", last, "--endpoint", sim.base_url)
    refused(r, 12, "too small for the model's reasoning")
    assert len(sim.chat_requests()) == 1


def test_directive_continuation_stripped_to_nothing_stops(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    """A server that restarts the answer: the echo is stripped, nothing new is left."""
    sim = make_simulator(answer_words=40, directive_restarts=True)
    r = review(
        cli, sim, "--max-tokens", "10", "--continuation-style", "directive",
        "--max-continuations", "10",
    )  # fmt: skip
    assert r.code == 12, r.err
    assert len(sim.chat_requests()) == 2
    segs = r.json()["segments"]
    assert answers(repo, r)[-1] == "" and segs[-1]["finish_reason"] == "length"


def test_a_raised_continuation_cap_continues_an_empty_primary(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(answer_words=20, reasoning_words=30)
    r = review(cli, sim, "--max-tokens", "25", "--continuation-max-tokens", "200")
    assert r.code == 0, r.err
    assert answers(repo, r)[0] == ""
    assert answers(repo, r)[1] == full_answer(primary_messages(sim), words=20)


THINKING = {"max_tokens": 20, "max_continuations": 3}


def stalled_batch(repo: Path, make_simulator: MakeSim, cli: Cli) -> tuple[Simulator, CliResult]:
    """A batch of one entry whose model thinks past every cap of 20 tokens."""
    sim = make_simulator(answer_words=30, reasoning_words=50)
    manifest(repo, ["think"], defaults=THINKING)
    r = batch(cli, sim)
    assert r.code == 11 and statuses(r) == {"think": "truncated"}, r.err
    return sim, r


def test_batch_entry_that_makes_no_progress_says_why_and_is_not_resent(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim, r = stalled_batch(repo, make_simulator, cli)
    (entry,) = r.json()["entries"]
    assert "too small for the model's reasoning" in entry["error"]
    assert "continuation_max_tokens" in entry["error"]
    assert len(sim.chat_requests()) == 1
    again = batch(cli, sim)
    assert again.code == 11
    assert len(sim.chat_requests()) == 1
    assert again.json()["entries"][0]["attempts"] == 0


def test_batch_rerun_with_a_raised_continuation_cap_continues_the_stalled_chain(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim, first = stalled_batch(repo, make_simulator, cli)
    primary = first.json()["entries"][0]["answer_paths"][0]
    manifest(repo, ["think"], defaults={**THINKING, "continuation_max_tokens": 200})
    r = batch(cli, sim)
    assert r.code == 0, r.err
    (entry,) = r.json()["entries"]
    assert entry["status"] == "ok" and entry["answer_paths"][0] == primary
    assert len(sim.chat_requests()) == 2


# --------------------------------------------------------------------------- 3. output folder


@pytest.fixture
def immutable() -> Iterator[Callable[[Path], None]]:
    """Makes a folder immutable (``chattr +i``): not writable even for root, as tests run."""
    locked: list[Path] = []

    def lock(path: Path) -> None:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not available here: {done.stderr.decode().strip()}")
        locked.append(path)

    try:
        yield lock
    finally:
        for path in locked:
            subprocess.run(["chattr", "-i", str(path)], check=False)


BAD_FOLDERS = ["a-file", "under-a-file", "not-creatable", "not-writable"]


def bad_folder(repo: Path, kind: str, immutable: Callable[[Path], None]) -> str:
    """An ``--output-dir`` of the given kind, relative to the repository root."""
    if kind == "a-file":
        return "docs/spec.md"
    if kind == "under-a-file":
        return "docs/spec.md/out"
    (repo / "locked").mkdir()
    immutable(repo / "locked")
    return "locked/new" if kind == "not-creatable" else "locked"


@pytest.mark.parametrize("dry", [False, True], ids=["run", "dry-run"])
@pytest.mark.parametrize("kind", BAD_FOLDERS)
def test_run_checks_the_output_folder_before_sending(
    repo: Path, simulator: Simulator, cli: Cli, immutable: Any, kind: str, dry: bool
) -> None:
    folder = bad_folder(repo, kind, immutable)
    before = files_under(repo)
    r = review(cli, simulator, "--output-dir", folder, *(["--dry-run"] if dry else []))
    refused(r, 10, folder.split("/")[0])
    assert simulator.chat_requests() == []
    assert files_under(repo) == before


@pytest.mark.parametrize("dry", [False, True], ids=["batch", "dry-run"])
@pytest.mark.parametrize("kind", BAD_FOLDERS)
def test_batch_checks_the_output_folders_before_sending(
    repo: Path, simulator: Simulator, cli: Cli, immutable: Any, kind: str, dry: bool
) -> None:
    folder = bad_folder(repo, kind, immutable)
    manifest(repo, ["a", "b"], per_entry={"b": {"output_dir": folder}})
    before = files_under(repo)
    r = batch(cli, simulator, *(["--dry-run"] if dry else []))
    refused(r, 10, folder.split("/")[0])
    assert simulator.chat_requests() == []
    assert files_under(repo) == before


def test_continue_checks_the_chains_folder_before_sending(
    repo: Path, make_simulator: MakeSim, cli: Cli, immutable: Any
) -> None:
    sim = make_simulator(answer_words=60)
    first = review(cli, sim, "--max-tokens", "10", "--max-continuations", "0")
    assert first.code == 4
    immutable(repo / "reviews")
    r = cli("continue", first.json()["segments"][0]["answer_path"], "--endpoint", sim.base_url)
    refused(r, 10, "reviews")
    assert len(sim.chat_requests()) == 1


def test_dry_run_leaves_no_output_folder_behind(repo: Path, simulator: Simulator, cli: Cli) -> None:
    r = review(cli, simulator, "--output-dir", "out/deep", "--dry-run")
    assert r.code == 0, r.err
    assert not (repo / "out").exists()


@pytest.mark.parametrize("dry", [False, True], ids=["batch", "dry-run"])
def test_a_report_path_that_is_a_folder_is_refused_before_sending(
    repo: Path, simulator: Simulator, cli: Cli, dry: bool
) -> None:
    manifest(repo, ["a"])
    (repo / "report.json").mkdir()
    r = batch(cli, simulator, "--report", "report.json", *(["--dry-run"] if dry else []))
    refused(r, 10, "report.json")
    assert simulator.chat_requests() == []


def test_a_report_folder_that_is_not_writable_is_refused_before_sending(
    repo: Path, simulator: Simulator, cli: Cli, immutable: Any
) -> None:
    manifest(repo, ["a"])
    (repo / "locked").mkdir()
    immutable(repo / "locked")
    r = batch(cli, simulator, "--report", "locked/report.json")
    refused(r, 10, "locked")
    assert simulator.chat_requests() == []


LONG_MODEL = "hf.co/" + "very-long-organisation/" * 6 + "model-GGUF:Q4_K_M"


def test_file_names_too_long_for_the_file_system_are_refused_before_sending(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(models={LONG_MODEL})
    r = review(cli, sim, "--model", LONG_MODEL, "--topic", "t" * 100)
    refused(r, 10, "too long", "--topic")
    assert sim.chat_requests() == []


def test_continue_refuses_a_continuation_model_whose_names_are_too_long_before_sending(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(answer_words=60)
    first = review(cli, sim, "--max-tokens", "10", "--max-continuations", "0", "--topic", "t" * 100)
    assert first.code == 4
    path = first.json()["segments"][0]["answer_path"]
    r = cli("continue", path, "--endpoint", sim.base_url, "--continuation-model", LONG_MODEL)
    refused(r, 10, "too long")
    assert len(sim.chat_requests()) == 1


def test_an_endpoint_the_receipt_cannot_record_is_refused_before_sending(
    repo: Path, simulator: Simulator, cli: Cli
) -> None:
    """The frozen schema wants an RFC 3986 URI; a receipt refused after the answer arrived
    would leave a paid answer without one."""
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.chat_url + "?x=|")
    refused(r, 2, "receipt of this review would not validate", "$.endpoint")
    assert simulator.chat_requests() == []
    assert not (repo / "reviews").exists()


def test_a_bad_continuation_body_is_refused_before_the_primary_is_sent(
    repo: Path, simulator: Simulator, cli: Cli
) -> None:
    r = review(cli, simulator, "--no-stream", "--continuation-extra-body", '{"stream_options": {}}')
    refused(r, 2, "stream_options")
    assert simulator.chat_requests() == []


# --------------------------------------------------------------------------- 4. budget, no usage


def test_token_budget_holds_when_the_server_reports_no_usage(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(omit_usage=True, llama_stream=True)
    manifest(repo, ["a", "b", "c"])
    r = batch(cli, sim, "--jobs", "1", "--max-total-tokens", "50")
    assert r.code == 11
    assert statuses(r) == {"a": "ok", "b": "pending", "c": "pending"}
    assert len(sim.chat_requests()) == 1
    report = r.json()
    assert report["stopped"] == "budget"
    assert report["total_tokens"] is None
    assert report["estimated_tokens"] > 50
    assert "estimated" in r.err


# --------------------------------------------------------------------------- 5. advice that works


def cut_off_batch(repo: Path, make_simulator: MakeSim, cli: Cli) -> tuple[Simulator, CliResult]:
    """A batch whose one entry stays cut off (an 80-word answer, max_continuations 1)."""
    sim = make_simulator(answer_words=80)
    manifest(repo, ["long"], defaults={"max_tokens": 20, "max_continuations": 1})
    r = batch(cli, sim)
    assert r.code == 11 and statuses(r) == {"long": "truncated"}, r.err
    return sim, r


def test_truncated_batch_entry_advises_what_continues_it(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    _, r = cut_off_batch(repo, make_simulator, cli)
    error = r.json()["entries"][0]["error"]
    assert "max_continuations" in error
    assert "raise max_continuations or max_tokens" not in error
    assert "restart" in error  # says that changing max_tokens starts over


def test_rerun_with_a_higher_max_continuations_flag_continues_the_cut_chain(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim, first = cut_off_batch(repo, make_simulator, cli)
    primary = first.json()["entries"][0]["answer_paths"][0]
    r = batch(cli, sim, "--max-continuations", "10")
    assert r.code == 0, r.err
    (entry,) = r.json()["entries"]
    assert entry["status"] == "ok" and entry["answer_paths"][0] == primary
    text = "".join((repo / p).read_text("utf-8") for p in entry["answer_paths"])
    assert text == full_answer(primary_messages(sim), words=80)


def test_batch_incomplete_hint_does_not_promise_a_plain_rerun_continues(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    _, r = cut_off_batch(repo, make_simulator, cli)
    refused(r, 11, "--max-continuations")


# --------------------------------------------------------------------------- 6. continue --force


def test_continue_force_sends_one_continuation_on_a_finished_chain(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(answer_words=30)
    first = review(cli, sim, "--max-tokens", "100")
    assert first.code == 0
    path = first.json()["segments"][0]["answer_path"]
    r = cli("continue", path, "--endpoint", sim.base_url, "--force", "--json")
    assert r.code == 0, r.err
    assert len(sim.chat_requests()) == 2
    assert len(r.json()["segments"]) == 2
    assert json.loads(sim.chat_requests()[1].body)["messages"][-1]["role"] == "assistant"


# --------------------------------------------------------------------------- 11. unknown usage


def test_run_without_reported_usage_says_unknown_not_zero(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(omit_usage=True)
    r = review(cli, sim)
    assert r.code == 0, r.err
    data = r.json()
    assert data["usage"] is None
    assert data["usage_reported"] is False
    assert data["estimated_tokens"] > 0
    assert data["segments"][0]["usage"] is None
    receipt = json.loads((repo / data["segments"][0]["receipt_path"]).read_text())
    assert receipt["usage"]["total_tokens"] == 0  # the frozen schema needs integers


def test_done_line_says_tokens_are_unknown(repo: Path, make_simulator: MakeSim, cli: Cli) -> None:
    sim = make_simulator(omit_usage=True)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url)
    assert r.code == 0, r.err
    done = [ln for ln in r.err.splitlines() if ": done: 1 segment, " in ln]
    assert len(done) == 1 and "unknown" in done[0] and " 0 tokens" not in done[0]


def test_the_silent_truncation_check_is_said_to_be_off_once(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(omit_usage=True, answer_words=60)
    r = review(cli, sim, "--max-tokens", "20")
    assert r.code == 0, r.err
    assert len(r.json()["segments"]) > 1
    assert r.err.count("silently truncated prompt") == 1


def test_batch_report_says_unknown_usage_not_zero(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(omit_usage=True)
    manifest(repo, ["a"])
    r = batch(cli, sim)
    assert r.code == 0, r.err
    (entry,) = r.json()["entries"]
    assert entry["usage"] is None and entry["usage_reported"] is False
    assert entry["estimated_tokens"] > 0
    assert r.json()["total_tokens"] is None
    plain = cli("batch", "reviews.toml", "--endpoint", sim.base_url)  # skipped: still unknown
    assert plain.code == 0, plain.err
    (line,) = [ln for ln in plain.err.splitlines() if "skipped a" in ln]
    assert "unknown tokens" in line and " 0 tokens" not in line


def test_stats_say_unknown_for_receipts_without_usage(
    repo: Path, make_simulator: MakeSim, cli: Cli
) -> None:
    sim = make_simulator(omit_usage=True)
    assert review(cli, sim).code == 0
    r = cli("stats", "--json")
    assert r.code == 0, r.err
    total = r.json()["total"]
    assert total["segments"] == 1 and total["segments_without_usage"] == 1
    assert total["total_tokens"] is None
    table = cli("stats")
    assert "unknown" in table.out
