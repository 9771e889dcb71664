"""Faults: a batch with continuations against a simulator failing ~30% of requests, every way.

Required of every run: each entry ends ``ok``, or ``failed`` honestly (an error, no receipt for
the segment that failed, exit 11); every receipt written passes the real ``verify``; every
stitched chain is the simulator's full answer to the primary messages rebuilt from the request
record; no temporary file is left; the report's attempts are the requests the simulator saw.
Re-running completes what failed without sending anything already answered.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.records.chain import find_chain
from deepseek_review.testing.simulator import TRANSIENT_FAULTS
from tests.support.reliability import (
    ANSWER_WORDS,
    REASONING_WORDS,
    Batches,
    BatchRun,
    Chains,
    Planned,
    check_files,
    finished_prompts,
    orphans_on_disk,
    plan,
    prompt_sha,
    receipts_on_disk,
    requests_per_topic,
    temp_files,
    varied_entries,
    write_manifest,
    write_notes,
)

pytestmark = pytest.mark.usefixtures("both_apis")

#: Every fault kind a client should survive: 500/502/503, 429 with Retry-After, 429 with a
#: string error body, connection reset, stall past the read timeout, truncated JSON (or a
#: garbage SSE event), an SSE stream cut before its finish chunk.
FAULT_KINDS = TRANSIENT_FAULTS
FAULT_RATE = 0.3
#: The stall (3 s) outlasts the read timeout (0.5 s) by far, even on a loaded machine.
READ_TIMEOUT = "0.5"
STALL_SECONDS = 3.0
BATCH_ARGS = ("--jobs", "8", "--retry-wait", "0.01", "--read-timeout", READ_TIMEOUT)


def fault_simulator(make_simulator: Any, seed: int, **overrides: Any) -> Any:
    return make_simulator(
        answer_words=ANSWER_WORDS,
        reasoning_words=REASONING_WORDS,
        fault_rate=FAULT_RATE,
        fault_kinds=FAULT_KINDS,
        fault_seed=seed,
        retry_after=0.05,
        stall_seconds=STALL_SECONDS,
        **overrides,
    )


def setup_batch(repo: Path, sim: Any, reviews: int, seed: int) -> dict[str, Planned]:
    notes = write_notes(repo, 6, seed)
    topics = [f"t{i:03d}" for i in range(reviews)]
    write_manifest(repo, varied_entries(topics, notes, seed, reasoning=True))
    return plan(repo, sim.base_url)


def check_failed_honestly(repo: Path, topic: str, entry: dict[str, Any]) -> None:
    """No receipt for the failed segment, an error message, only real files listed."""
    assert entry["error"] and "\n" not in entry["error"], entry
    assert re.search(r"\(after \d+ attempts?\)", entry["error"]), entry
    mine = sorted(
        rel for rel in receipts_on_disk(repo) if rel.split("/")[-1].startswith(f"{topic}_deepseek_")
    )
    assert sorted(entry["receipt_paths"]) == mine
    if not mine:
        assert entry["answer_paths"] == [] and entry["usage"] is None
        return
    chain = find_chain(repo, entry["receipt_paths"][0])
    assert [s.receipt_path for s in chain] == entry["receipt_paths"]
    assert chain[-1].finish_reason == "length"  # the continuation after it is what failed


def check_run(
    repo: Path, run: BatchRun, planned: dict[str, Planned], before: set[str]
) -> dict[str, str]:
    """Everything a single run must get right; returns the entries' statuses."""
    assert run.report is not None, run.err
    statuses = run.statuses()
    assert set(statuses) == set(planned)
    complete = all(s in ("ok", "skipped") for s in statuses.values())
    assert run.code == (0 if complete else 11), run.err[-2000:]
    assert run.report["status"] == ("complete" if complete else "incomplete")
    assert run.report["counts"] == {
        s: sum(1 for v in statuses.values() if v == s)
        for s in ("ok", "skipped", "truncated", "failed", "pending")
    }
    assert set(statuses.values()) <= {"ok", "skipped", "failed"}, statuses
    # Nothing answered before is sent again; the attempts reported are the requests made.
    assert not [r for r in run.requests if prompt_sha(r) in before]
    sent = requests_per_topic(run.requests, planned)
    chains = Chains(repo)
    for topic, entry in run.entries().items():
        assert entry["attempts"] == sent.get(topic, 0), (topic, entry, sent.get(topic))
        if entry["status"] == "failed":
            check_failed_honestly(repo, topic, entry)
        else:
            chains.check(planned[topic], entry)
    written = [r for r in receipts_on_disk(repo).values() if r["prompt_sha256"] not in before]
    assert sum(e["new_segments"] for e in run.entries().values()) == len(written)
    assert temp_files(repo) == []
    assert orphans_on_disk(repo) == [] and run.report["orphans"] == []
    check_files(repo)
    return statuses


def run_fault_suite(repo: Path, make_simulator: Any, reviews: int, seed: int) -> dict[str, Any]:
    sim = fault_simulator(make_simulator, seed)
    planned = setup_batch(repo, sim, reviews, seed)
    batches = Batches(repo, sim, *BATCH_ARGS)
    runs: list[BatchRun] = []
    failed_first: list[str] = []
    while True:
        assert len(runs) < 6, "the batch does not converge"
        before = finished_prompts(repo)
        previous = runs[-1].statuses() if runs else None
        run = batches.run()
        runs.append(run)
        statuses = check_run(repo, run, planned, before)
        if previous is not None:
            # A re-run sends nothing for what finished: only the failed entries are retried.
            unfinished = {t for t, s in previous.items() if s not in ("ok", "skipped")}
            assert set(requests_per_topic(run.requests, planned)) <= unfinished
            assert {t for t, s in statuses.items() if s == "skipped"} >= set(previous) - unfinished
        else:
            failed_first = sorted(t for t, s in statuses.items() if s == "failed")
        if run.code == 0:
            break
    # Done: one more run finds nothing to do and sends nothing.
    last = batches.run()
    assert last.code == 0 and last.requests == []
    assert set(last.statuses().values()) == {"skipped"}
    chains = Chains(repo)
    texts = {t: chains.check(p) for t, p in planned.items()}
    assert len(set(texts.values())) == len(texts)  # every review its own answer
    for p in list(planned.values())[:: max(1, len(planned) // 10)]:
        chains.check_find_chain(p)

    requests = sim.chat_requests()
    answered = finished_prompts(repo)
    faults = Counter(r.fault for r in requests if r.fault is not None)
    survived = Counter(r.fault for r in requests if r.fault and prompt_sha(r) in answered)
    assert survived == faults  # every faulted request was answered in the end
    assert dict(faults) == sim.stats()["faults"]
    assert set(faults) == set(FAULT_KINDS), faults  # every kind was injected
    segments = len(receipts_on_disk(repo))
    first = runs[0].report
    assert first is not None
    counts = {
        "reviews": reviews,
        "segments": segments,
        "continuations": segments - reviews,
        "requests": len(requests),
        "faults": dict(sorted(faults.items())),
        "faults_total": sum(faults.values()),
        "fault_share": round(sum(faults.values()) / len(requests), 3),
        "retries": len(requests) - segments,
        "first_run": dict(first["counts"]),
        "failed_first_run": failed_first,
        "runs_to_complete": len(runs),
    }
    sys.stderr.write(f"\nRELIABILITY faults {json.dumps(counts)}\n")
    return counts


def test_a_fast_batch_survives_every_fault_kind(repo, make_simulator):
    counts = run_fault_suite(repo, make_simulator, reviews=30, seed=6)
    assert counts["continuations"] > counts["reviews"]  # most chains continue


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_batch_of_300_reviews_survives_30_percent_faults(repo, make_simulator):
    counts = run_fault_suite(repo, make_simulator, reviews=300, seed=2026)
    assert 0.2 < counts["fault_share"] < 0.4


def test_a_rerun_after_failures_completes_them_and_resends_nothing_answered(repo, make_simulator):
    sim = fault_simulator(make_simulator, seed=11)
    planned = setup_batch(repo, sim, 20, seed=11)
    batches = Batches(repo, sim, *BATCH_ARGS)
    first = batches.run("--max-attempts", "1")  # every fault is fatal: many entries fail
    statuses = check_run(repo, first, planned, set())
    failed = {t for t, s in statuses.items() if s == "failed"}
    partial = {t for t in failed if first.entries()[t]["receipt_paths"]}
    assert failed and partial and first.code == 11
    assert "batch incomplete" in first.err

    before = finished_prompts(repo)
    second = batches.run("--max-attempts", "8")
    statuses = check_run(repo, second, planned, before)
    assert set(requests_per_topic(second.requests, planned)) == failed
    assert statuses == {t: "ok" if t in failed else "skipped" for t in planned}
    for t in partial:  # a chain cut by a failed continuation is continued, not restarted
        old = first.entries()[t]["receipt_paths"]
        assert second.entries()[t]["receipt_paths"][: len(old)] == old
    assert second.code == 0

    third = batches.run()
    assert third.code == 0 and third.requests == []
