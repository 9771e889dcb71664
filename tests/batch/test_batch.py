"""``batch``: parallel runs, one shared client, resume, shards, honest reports, stops."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from typing import Any

import pytest

from deepseek_review.batch.manifest import Shard
from deepseek_review.batch.run import BatchOptions, run_batch
from deepseek_review.testing.simulator import Simulator, full_answer
from tests.support.batch import batch, manifest, spawn_batch, statuses, wait_for
from tests.support.cli import files_under


def count_connections(sim: Simulator) -> list[int]:
    """Count the TCP connections the simulator accepts from now on."""
    count = [0]
    assert sim._server is not None
    original = sim._server.process_request

    def process_request(request: Any, address: Any) -> None:
        count[0] += 1
        original(request, address)

    sim._server.process_request = process_request  # type: ignore[method-assign, assignment]
    return count


def admit_times(sim: Simulator) -> list[tuple[float, str | None]]:
    """(arrival time, fault) of every chat request from now on."""
    times: list[tuple[float, str | None]] = []
    original = sim.admit

    def admit(*args: Any, **kw: Any) -> Any:
        result = original(*args, **kw)
        if args[1].startswith("/v1/chat"):
            times.append((time.monotonic(), result[0]))
        return result

    sim.admit = admit  # type: ignore[method-assign]
    return times


# --------------------------------------------------------------------------- running


def test_parallel_batch_of_twenty_writes_every_review(repo, make_simulator, cli):
    sim = make_simulator(answer_words=20, latency=0.05)
    topics = [f"r{i:02d}" for i in range(20)]
    manifest(repo, topics)
    r = batch(cli, sim, "--jobs", "6")
    assert r.code == 0, r.err
    report = r.json()
    assert report["status"] == "complete"
    assert report["counts"] == {"ok": 20, "skipped": 0, "truncated": 0, "failed": 0, "pending": 0}
    assert len(sim.chat_requests()) == 20
    for e in report["entries"]:
        (receipt,) = e["receipt_paths"]
        assert json.loads((repo / receipt).read_text())["answer_path"] == e["answer_paths"][0]
        assert e["attempts"] == 1 and e["error"] is None and e["usage"]["total_tokens"] > 0
    assert report["total_tokens"] == sum(e["usage"]["total_tokens"] for e in report["entries"])


def test_entries_get_exactly_what_run_sends(repo, simulator, cli):
    manifest(repo, ["spec"], defaults={"max_tokens": 300})
    r = batch(cli, simulator)
    assert r.code == 0, r.err
    batch_body = simulator.chat_requests()[0].body
    r = cli(
        "run", "-c", "docs/spec.md", "-p", "Check spec.", "--topic", "spec", "--max-tokens",
        "300", "--endpoint", simulator.base_url, "--output-dir", "other",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert simulator.chat_requests()[1].body == batch_body


def test_one_shared_client_reuses_connections(repo, make_simulator, cli):
    sim = make_simulator(answer_words=20, latency=0.02)
    connections = count_connections(sim)
    manifest(repo, [f"r{i:02d}" for i in range(20)])
    r = batch(cli, sim, "--jobs", "4")
    assert r.code == 0, r.err
    assert len(sim.chat_requests()) == 20
    assert connections[0] <= 5  # the 4 jobs', and the Ollama pre-flight's


def test_no_more_requests_in_flight_than_jobs(repo, make_simulator, cli):
    sim = make_simulator(answer_words=20, latency=0.1)
    lock = threading.Lock()
    active, peak = [0], [0]
    original = sim.admit

    def admit(*args: Any, **kw: Any) -> Any:
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        return original(*args, **kw)

    def finished(line: str) -> None:
        with lock:
            active[0] -= 1

    sim.admit = admit
    sim.log = finished
    manifest(repo, [f"r{i:02d}" for i in range(12)])
    r = batch(cli, sim, "--jobs", "3")
    assert r.code == 0, r.err
    assert peak[0] == 3


def test_a_429_slows_every_job_down(repo, make_simulator, cli):
    sim = make_simulator(answer_words=20, latency=0.3, retry_after=1.0)
    sim.script_faults(["429"])
    times = admit_times(sim)
    manifest(repo, [f"r{i}" for i in range(8)])
    r = batch(cli, sim, "--jobs", "4")
    assert r.code == 0, r.err
    limited = next(t for t, fault in times if fault == "429")
    # Requests already on their way arrive within a few ms; after that, nobody sends until
    # the Retry-After has passed (the finished jobs' next reviews included).
    quiet = [t for t, _ in times if limited + 0.1 < t < limited + 0.95]
    assert quiet == []
    later = [t for t, _ in times if t >= limited + 0.95]
    assert len(later) >= 5  # the retry, and the reviews that waited
    assert statuses(r) == {f"r{i}": "ok" for i in range(8)}
    retried = [e for e in r.json()["entries"] if e["attempts"] == 2]
    assert len(retried) == 1


# --------------------------------------------------------------------------- resume


def test_rerunning_a_finished_batch_makes_no_request(repo, simulator, cli):
    manifest(repo, ["a", "b", "c"])
    assert batch(cli, simulator).code == 0
    sent = len(simulator.chat_requests())
    before = files_under(repo / "reviews")
    r = batch(cli, simulator)
    assert r.code == 0, r.err
    assert len(simulator.chat_requests()) == sent
    assert statuses(r) == {"a": "skipped", "b": "skipped", "c": "skipped"}
    assert files_under(repo / "reviews") == before
    assert all(e["receipt_paths"] and e["attempts"] == 0 for e in r.json()["entries"])


def test_a_changed_entry_is_reviewed_again(repo, simulator, cli):
    manifest(repo, ["a", "b"])
    assert batch(cli, simulator).code == 0
    manifest(repo, ["a", "b"], per_entry={"b": {"prompt": "A new question."}})
    r = batch(cli, simulator)
    assert statuses(r) == {"a": "skipped", "b": "ok"}
    assert len(simulator.chat_requests()) == 3


def test_a_truncated_chain_is_continued_not_restarted(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    manifest(repo, ["long"], defaults={"max_tokens": 25, "max_continuations": 0})
    first = batch(cli, sim)
    assert first.code == 11
    (entry,) = first.json()["entries"]
    assert entry["status"] == "truncated" and len(entry["receipt_paths"]) == 1
    primary = entry["answer_paths"][0]

    manifest(repo, ["long"], defaults={"max_tokens": 25, "max_continuations": 5})
    second = batch(cli, sim)
    assert second.code == 0, second.err
    (entry,) = second.json()["entries"]
    assert entry["status"] == "ok"
    assert entry["answer_paths"][0] == primary
    assert entry["new_segments"] == len(entry["answer_paths"]) - 1 >= 1
    later = sim.chat_requests()[1:]
    assert len(later) == entry["new_segments"]
    assert all(json.loads(q.body)["messages"][-1]["role"] == "assistant" for q in later)
    text = "".join((repo / p).read_text(encoding="utf-8") for p in entry["answer_paths"])
    messages = json.loads(sim.chat_requests()[0].body)["messages"]
    assert text == full_answer(messages, words=60)


def test_continuations_count_those_already_made(repo, make_simulator, cli):
    sim = make_simulator(answer_words=80)
    manifest(repo, ["long"], defaults={"max_tokens": 20, "max_continuations": 1})
    first = batch(cli, sim)
    assert first.code == 11
    assert statuses(first) == {"long": "truncated"}
    assert len(sim.chat_requests()) == 2
    r = batch(cli, sim)  # the cap is reached: nothing to send
    assert r.code == 11
    assert len(sim.chat_requests()) == 2
    (entry,) = r.json()["entries"]
    assert entry["status"] == "truncated" and entry["attempts"] == 0


def test_an_answer_without_receipt_is_redone_and_reported_as_orphan(repo, simulator, cli):
    manifest(repo, ["a", "b"])
    first = batch(cli, simulator)
    entries = {e["topic"]: e for e in first.json()["entries"]}
    (lost,) = entries["b"]["receipt_paths"]
    (repo / lost).unlink()  # as if killed between answer and receipt
    r = batch(cli, simulator)
    assert r.code == 0, r.err
    assert statuses(r) == {"a": "skipped", "b": "ok"}
    answer = entries["b"]["answer_paths"][0]
    record = answer[: -len(".md")] + ".request.json"
    assert r.json()["orphans"] == [answer, record]
    (redone,) = r.json()["entries"][1]["answer_paths"]
    assert redone != answer
    assert (repo / answer).is_file()  # reported, never deleted


def test_stale_temp_files_are_removed_and_fresh_ones_kept(repo, simulator, cli):
    manifest(repo, ["a"])
    out = repo / "reviews"
    out.mkdir()
    old = out / ".deepseek-review-0123456789abcdef.tmp"
    fresh = out / ".deepseek-review-fedcba9876543210.tmp"
    old.write_text("half")
    fresh.write_text("being written")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    assert batch(cli, simulator).code == 0
    assert not old.exists()
    assert fresh.exists()


# --------------------------------------------------------------------------- shards


def test_shards_together_run_every_entry_exactly_once(repo, simulator, cli):
    topics = [f"t{i:02d}" for i in range(15)]
    manifest(repo, topics)
    seen: list[str] = []
    for k in range(3):
        r = batch(cli, simulator, "--shard", f"{k}/3")
        assert r.code == 0, r.err
        report = r.json()
        assert report["shard"] == f"{k}/3" and report["entries_in_manifest"] == 15
        assert all(e["status"] == "ok" for e in report["entries"])
        seen += [e["topic"] for e in report["entries"]]
    assert sorted(seen) == topics
    assert len(simulator.chat_requests()) == 15
    receipts = [p for p in files_under(repo / "reviews") if p.endswith(".receipt.json")]
    assert len(receipts) == 15
    # The whole batch afterwards finds nothing left to do.
    r = batch(cli, simulator)
    assert set(statuses(r).values()) == {"skipped"}


def test_bad_shard_is_a_config_error(repo, simulator, cli):
    manifest(repo, ["a"])
    r = batch(cli, simulator, "--shard", "3/3")
    assert r.code == 2
    assert "0 <= K < N" in r.err


# --------------------------------------------------------------------------- reports


def test_failed_entry_has_an_error_and_no_receipt(repo, make_simulator, cli):
    sim = make_simulator(models={"only-this"})
    manifest(
        repo,
        ["good", "bad"],
        defaults={"model": "only-this"},
        per_entry={"bad": {"model": "another-model"}},
    )
    r = batch(cli, sim, "--report", "report.json")
    assert r.code == 11
    report = json.loads((repo / "report.json").read_text())
    assert report == r.json()
    assert report["status"] == "incomplete"
    assert report["counts"]["ok"] == 1 and report["counts"]["failed"] == 1
    bad = report["entries"][1]
    assert bad["status"] == "failed"
    assert bad["answer_paths"] == [] and bad["receipt_paths"] == []
    assert bad["usage"] is None
    assert bad["attempts"] == 1
    assert "answered 404" in bad["error"] and "another-model" in bad["error"]
    assert "\n" not in bad["error"]
    assert not any("bad_" in p for p in files_under(repo / "reviews"))
    assert "batch incomplete" in r.err


def test_a_failed_continuation_lists_only_the_segments_really_written(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    sim.script_faults([None, "500"])
    manifest(repo, ["long"], defaults={"max_tokens": 25})
    r = batch(cli, sim, "--max-attempts", "1")
    assert r.code == 11
    (entry,) = r.json()["entries"]
    assert entry["status"] == "failed"
    assert "answered 500" in entry["error"]
    (receipt,) = entry["receipt_paths"]
    written = json.loads((repo / receipt).read_text())
    assert entry["usage"] == written["usage"]
    assert entry["attempts"] == 2 and entry["new_segments"] == 1
    # The next run continues that chain rather than starting over.
    r = batch(cli, sim)
    (entry,) = r.json()["entries"]
    assert entry["status"] == "ok" and entry["receipt_paths"][0] == receipt


def test_jsonl_manifest_runs_like_toml(repo, simulator, cli):
    lines = [
        {"defaults": {"max_tokens": 300}},
        {"topic": "a", "prompt": "Check a.", "context": "docs/spec.md"},
        {"topic": "b", "prompt": "Check b.", "context": ["src/pkg/*.py"]},
    ]
    (repo / "jobs.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    r = cli("batch", "jobs.jsonl", "--endpoint", simulator.base_url, "--json")
    assert r.code == 0, r.err
    assert statuses(r) == {"a": "ok", "b": "ok"}
    assert all(json.loads(q.body)["max_tokens"] == 300 for q in simulator.chat_requests())


def test_missing_report_folder_is_refused_before_sending(repo, simulator, cli):
    manifest(repo, ["a"])
    r = batch(cli, simulator, "--report", "no/such/folder/report.json")
    assert r.code == 10
    assert "--report no/such/folder/report.json: folder no/such/folder does not exist" in r.err
    assert simulator.chat_requests() == []


def test_report_file_is_replaced_by_the_next_run(repo, simulator, cli):
    manifest(repo, ["a"])
    assert batch(cli, simulator, "--report", "report.json").code == 0
    assert json.loads((repo / "report.json").read_text())["counts"]["ok"] == 1
    assert batch(cli, simulator, "--report", "report.json").code == 0
    assert json.loads((repo / "report.json").read_text())["counts"]["skipped"] == 1
    assert not [p for p in os.listdir(repo) if p.endswith(".tmp")]


def test_fail_fast_starts_nothing_after_the_first_failure(repo, make_simulator, cli):
    sim = make_simulator(models={"only-this"})
    manifest(
        repo,
        ["first", "second", "third"],
        defaults={"model": "another-model"},
    )
    r = batch(cli, sim, "--jobs", "1", "--fail-fast")
    assert r.code == 11
    assert statuses(r) == {"first": "failed", "second": "pending", "third": "pending"}
    assert len(sim.chat_requests()) == 1
    assert r.json()["stopped"] == "fail-fast"
    assert "--fail-fast" in r.err


def test_without_fail_fast_every_entry_is_tried(repo, make_simulator, cli):
    sim = make_simulator(models={"only-this"})
    manifest(repo, ["first", "second"], defaults={"model": "another-model"})
    r = batch(cli, sim, "--jobs", "1")
    assert statuses(r) == {"first": "failed", "second": "failed"}


def test_token_budget_stops_starting_reviews(repo, simulator, cli):
    manifest(repo, ["a", "b", "c"])
    r = batch(cli, simulator, "--jobs", "1", "--max-total-tokens", "1")
    assert r.code == 11
    assert statuses(r) == {"a": "ok", "b": "pending", "c": "pending"}
    assert len(simulator.chat_requests()) == 1
    report = r.json()
    assert report["stopped"] == "budget"
    assert report["total_tokens"] == report["entries"][0]["usage"]["total_tokens"]
    assert "token budget reached" in r.err
    assert report["entries"][1]["error"] == "not started: --max-total-tokens reached"
    # The budget counts this run's receipts only: the next run starts afresh.
    r = batch(cli, simulator, "--jobs", "1", "--max-total-tokens", "1")
    assert statuses(r) == {"a": "skipped", "b": "ok", "c": "pending"}


def test_reviews_start_in_the_manifests_order(repo, simulator, cli):
    topics = ["a", "b", "c", "d", "e", "f"]
    manifest(repo, topics)
    r = batch(cli, simulator, "--jobs", "1")
    assert r.code == 0, r.err
    bodies = [q.body for q in simulator.chat_requests()]
    assert [t for b in bodies for t in topics if f"Check {t}.".encode() in b] == topics


def test_dry_run_sends_and_writes_nothing(repo, simulator, cli):
    manifest(repo, ["a", "b"])
    before = files_under(repo)
    r = batch(cli, simulator, "--dry-run")
    assert r.code == 0, r.err
    assert [e["action"] for e in r.json()["entries"]] == ["new", "new"]
    assert simulator.chat_requests() == []
    assert files_under(repo) == before


def test_plain_progress_is_one_line_per_event(repo, simulator, cli):
    manifest(repo, ["a", "b"])
    r = cli("batch", "reviews.toml", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    assert r.out == ""  # results go to stdout only with --json
    assert "start a" in r.err and "ok a (1 segment" in r.err
    assert "batch complete: 2 ok" in r.err


def test_library_run_batch_returns_the_report(repo, simulator):
    manifest(repo, ["a"])
    report = run_batch(
        BatchOptions(manifest="reviews.toml", overrides={"endpoint": simulator.base_url})
    )
    assert report.complete and report.entries[0].status == "ok"
    assert Shard.parse("0/1").holds("a")


# --------------------------------------------------------------------------- interrupts


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_finishes_in_flight_reviews_writes_the_report_and_resume_completes(
    repo, make_simulator, cli, signum
):
    sim = make_simulator(answer_words=20, latency=1.0)
    topics = [f"r{i}" for i in range(6)]
    manifest(repo, topics)
    proc = spawn_batch(repo, sim.base_url)
    wait_for(lambda: len(sim.chat_requests()) == 2)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err
    report = json.loads((repo / "report.json").read_text())
    assert report["stopped"] == "interrupted" and report["status"] == "incomplete"
    assert report["counts"]["ok"] == 2 and report["counts"]["pending"] == 4
    assert len(sim.chat_requests()) == 2
    written = files_under(repo / "reviews")
    assert not [p for p in written if ".tmp" in p]
    assert len([p for p in written if p.endswith(".receipt.json")]) == 2
    done = [e["topic"] for e in report["entries"] if e["status"] == "ok"]

    sim.config.latency = 0.0
    r = batch(cli, sim)
    assert r.code == 0, r.err
    again = statuses(r)
    assert [t for t in topics if again[t] == "skipped"] == done
    assert len(sim.chat_requests()) == 6


def test_a_second_signal_exits_at_once(repo, make_simulator):
    sim = make_simulator(answer_words=20, latency=30.0)
    manifest(repo, ["a", "b"])
    proc = spawn_batch(repo, sim.base_url)
    wait_for(lambda: len(sim.chat_requests()) == 2)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)  # the first one is handled: no new work, waiting for the two in flight
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert time.monotonic() - t0 < 5
    assert proc.returncode == 130
    assert "again: exiting now" in err
    assert not (repo / "reviews").exists() or not files_under(repo / "reviews")
