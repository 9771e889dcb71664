"""Crashes: the batch process SIGKILLed mid-request and inside its write windows, then resumed.

Each kill adds reviews to the manifest, runs the batch as a process and kills it; after one or
two kills the batch is re-run to completion. Kills land while a request is in flight (the test
sends SIGKILL a seeded moment after the k-th request reached the simulator) or, through the
test hook ``DEEPSEEK_REVIEW_CRASH_AT``, at a named point of the write sequence: half of a
temporary file written, a temporary file written but not linked, an answer without its record,
a record without its receipt, a receipt just written, half of the report written.

Required after every kill: nothing half-written under a real name (every JSON file parses,
every answer with a receipt hashes to it, orphan answers are whole segments), and the real
``verify`` passes over the folder. Required of every run: no segment that has a receipt is
requested again. After every completion: the orphans left by kills are reported and their
reviews redone under new names, cut-off chains are continued, and every chain is the
simulator's full answer. At the end: the same segments, byte for byte, as a reference run done
once without kills; and the temporary files of killed writers go once they are old.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.errors import ConfigError
from deepseek_review.records import storage
from deepseek_review.records.storage import CRASH_POINTS
from deepseek_review.testing.simulator import RecordedRequest
from tests.support.reliability import (
    ANSWER_WORDS,
    MANIFEST,
    OUT,
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
    temp_files,
    varied_entries,
    write_manifest,
    write_notes,
)

pytestmark = pytest.mark.usefixtures("both_apis")

BATCH_ARGS = ("--jobs", "3", "--retry-wait", "0.01")
#: A kill that waits for a request lands while it is in flight when its extra delay is shorter
#: than the simulator's latency (the process cannot finish before that response has ended).
IN_FLIGHT = "request"


@dataclass(frozen=True)
class Kill:
    """Where to kill: ``request`` (in flight) or a crash point; ``at`` in [0, 1) picks which
    occurrence (of the requests or write points the remaining work is sure to reach)."""

    mode: str
    at: float

    def __str__(self) -> str:
        return f"{self.mode}@{self.at:.2f}"


@dataclass
class Tally:
    kills: Counter[str] = field(default_factory=Counter)
    orphan_answers: set[str] = field(default_factory=set)
    temp_files: set[str] = field(default_factory=set)
    chains_continued: int = 0
    redone_after_orphan: int = 0
    requests: int = 0


class CrashSequence:
    def __init__(
        self,
        repo: Path,
        sim: Any,
        entries: dict[str, dict[str, Any]],
        reference: dict[str, list[str]],
        latency: float,
        seed: int,
    ) -> None:
        self.repo = repo
        self.sim = sim
        self.entries = entries
        self.reference = reference
        """Each topic's segment texts in the uninterrupted reference run."""
        self.latency = latency
        self.rng = random.Random(seed)
        self.batches = Batches(repo, sim, *BATCH_ARGS)
        self.planned: dict[str, Planned] = {}
        self.tally = Tally()

    def add_topics(self, topics: list[str]) -> None:
        current = [*self.planned, *topics]
        write_manifest(self.repo, {t: self.entries[t] for t in current})
        self.planned = plan(self.repo, self.sim.base_url)

    # -- what the remaining work is sure to do ------------------------------------------

    def requests_left(self) -> int:
        chains = Chains(self.repo)
        left = 0
        for topic, p in self.planned.items():
            done = len(chains.chain(p)) if chains.primaries(p) else 0
            left += len(self.reference[topic]) - done
        return left

    def writes_left(self) -> int:
        """write_new calls left: answer, record, receipt (and reasoning when kept) each."""
        chains = Chains(self.repo)
        left = 0
        for topic, p in self.planned.items():
            done = len(chains.chain(p)) if chains.primaries(p) else 0
            per = 4 if self.entries[topic].get("keep_reasoning") else 3
            left += per * (len(self.reference[topic]) - done)
        return left

    # -- one kill -----------------------------------------------------------------------

    def kill(self, kill: Kill) -> BatchRun:
        before = finished_prompts(self.repo)
        if kill.mode == IN_FLIGHT:
            k = 1 + int(kill.at * self.requests_left())
            delay = self.rng.uniform(0.0, self.latency / 2)
            run = self.batches.run_and_kill(_after_requests(k, delay))
        else:
            if kill.mode == "mid-report-write":
                occurs = 1  # one report, at the end of the run
            elif kill.mode.endswith("temp-write"):
                occurs = self.writes_left()
            else:
                occurs = self.requests_left()
            n = 1 + int(kill.at * occurs)
            run = self.batches.run(env={"DEEPSEEK_REVIEW_CRASH_AT": f"{kill.mode}:{n}"})
        assert run.killed, (str(kill), run.code, run.err[-2000:])
        assert run.report is None  # never a half-written report under its name
        self.tally.kills[kill.mode] += 1
        self.tally.requests += len(run.requests)
        assert not [r for r in run.requests if prompt_sha(r) in before]
        self.tally.temp_files.update(temp_files(self.repo))
        self.check_disk()
        return run

    def check_disk(self) -> None:
        """After a kill: nothing half-written anywhere, and verify passes over the folder."""
        check_files(self.repo)
        for rel in orphans_on_disk(self.repo):
            name = rel.rsplit("/", 1)[-1]
            if name.endswith(".md") and not name.endswith(".reasoning.md"):
                topic = name.split("_deepseek_", 1)[0]
                text = (self.repo / rel).read_text(encoding="utf-8")
                assert text in self.reference[topic]  # a whole segment, never a piece

    # -- re-running to completion -------------------------------------------------------

    def complete(self) -> BatchRun:
        before = finished_prompts(self.repo)
        orphans = orphans_on_disk(self.repo)
        chains = Chains(self.repo)
        partial = {
            t: [s.receipt_path for s in chains.chain(p)]
            for t, p in self.planned.items()
            if chains.primaries(p)
        }
        run = self.batches.run()
        assert run.code == 0, run.err[-3000:]
        assert run.report is not None
        self.tally.requests += len(run.requests)
        assert not [r for r in run.requests if prompt_sha(r) in before]
        # Orphans: reported, never counted as finished, their reviews done again.
        assert run.report["orphans"] == orphans
        statuses = run.statuses()
        chains = Chains(self.repo)
        answers = {s.answer_path for s in chains.segments.values()}
        assert not answers & set(orphans)
        for rel in orphans:
            if rel.endswith(".request.json"):
                record = json.loads((self.repo / rel).read_bytes())
                assert record["prompt_sha256"] in finished_prompts(self.repo)
        for topic, p in self.planned.items():
            entry = run.entries()[topic]
            chains.check(p, entry)
            old = partial.get(topic)
            if old is None:
                assert statuses[topic] == "ok"
            elif len(old) == len(self.reference[topic]):
                assert statuses[topic] == "skipped" and entry["attempts"] == 0
            else:  # cut off by a kill: continued from its last receipt, not restarted
                assert statuses[topic] == "ok" and entry["receipt_paths"][: len(old)] == old
                self.tally.chains_continued += 1
        self.tally.orphan_answers.update(
            o for o in orphans if o.endswith(".md") and not o.endswith(".reasoning.md")
        )
        check_files(self.repo)
        return run


def _after_requests(k: int, delay: float) -> Callable[[list[RecordedRequest]], bool]:
    """True ``delay`` seconds after the k-th request of the run reached the simulator."""
    seen: list[float] = []

    def when(requests: list[RecordedRequest]) -> bool:
        if len(requests) < k:
            return False
        if not seen:
            seen.append(time.monotonic())
        return time.monotonic() - seen[0] >= delay

    return when


def run_crash_suite(
    repo: Path,
    tmp_path: Path,
    make_simulator: Any,
    rounds: list[list[Kill]],
    *,
    per_kill: int,
    latency: float,
    seed: int,
) -> dict[str, Any]:
    notes = write_notes(repo, 4, seed)
    kills = sum(len(r) for r in rounds)
    topics = [f"c{i:03d}" for i in range(per_kill * kills)]
    entries = varied_entries(topics, notes, seed, reasoning=True)
    sim_options = {
        "answer_words": ANSWER_WORDS,
        "reasoning_words": REASONING_WORDS,
        "latency": latency,
    }

    # The reference: the whole manifest, once, without kills, in a copy of the repository.
    reference_repo = tmp_path / "reference"
    shutil.copytree(repo, reference_repo, symlinks=True)
    write_manifest(reference_repo, entries)
    ref_sim = make_simulator(**sim_options)
    ref_run = Batches(reference_repo, ref_sim, *BATCH_ARGS).run()
    assert ref_run.code == 0, ref_run.err
    assert set(ref_run.statuses().values()) == {"ok"}
    ref_planned = plan(reference_repo, ref_sim.base_url)
    ref_chains = Chains(reference_repo)
    reference = {t: ref_chains.texts(p) for t, p in ref_planned.items()}
    for p in ref_planned.values():
        ref_chains.check(p)

    sim = make_simulator(**sim_options)
    seq = CrashSequence(repo, sim, entries, reference, latency, seed)
    fresh = iter(topics)
    for round_kills in rounds:
        for kill in round_kills:
            seq.add_topics([next(fresh) for _ in range(per_kill)])  # work for this kill
            seq.kill(kill)
        seq.complete()

    # The final state is the uninterrupted run's: same entries, same segments, same text.
    final = Chains(repo)
    assert {p.prompt_sha256 for p in seq.planned.values()} == {
        p.prompt_sha256 for p in ref_planned.values()
    }
    for topic, p in seq.planned.items():
        assert final.texts(p) == reference[topic], topic
    for p in list(seq.planned.values())[:: max(1, len(topics) // 8)]:
        final.check_find_chain(p)

    # Temporary files of killed writers are ignored by verify and resume, and removed by the
    # next run once older than a minute (aged here rather than waited for).
    left = temp_files(repo)
    assert set(left) <= seq.tally.temp_files
    past = time.time() - 3600
    for rel in left:
        os.utime(repo / rel, (past, past))
    last = seq.batches.run()
    assert last.code == 0 and last.requests == []
    assert set(last.statuses().values()) == {"skipped"}
    assert temp_files(repo) == []
    check_files(repo)
    assert (repo / MANIFEST).is_file() and (repo / OUT).is_dir()

    counts = {
        "kills": sum(seq.tally.kills.values()),
        "kills_by_point": dict(sorted(seq.tally.kills.items())),
        "reviews": len(topics),
        "segments": sum(len(v) for v in reference.values()),
        "orphan_answers_redone": len(seq.tally.orphan_answers),
        "chains_continued_after_kill": seq.tally.chains_continued,
        "temp_files_left_by_kills": len(seq.tally.temp_files),
        "requests": seq.tally.requests,
        "requests_uninterrupted": len(ref_sim.chat_requests()),
    }
    sys.stderr.write(f"\nRELIABILITY crashes {json.dumps(counts)}\n")
    return counts


def test_kills_at_the_write_points_leave_a_state_resume_completes(repo, tmp_path, make_simulator):
    rounds = [
        [Kill("after-answer", 0.0)],  # an answer without record or receipt
        [Kill("after-record", 0.5)],  # answer and record, no receipt
        [Kill("mid-temp-write", 0.3)],  # half a temporary file
    ]
    counts = run_crash_suite(
        repo, tmp_path, make_simulator, rounds, per_kill=3, latency=0.05, seed=7
    )
    assert counts["kills"] == 3
    assert counts["orphan_answers_redone"] >= 2


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_twenty_random_kills_never_lose_or_repeat_a_finished_review(repo, tmp_path, make_simulator):
    rng = random.Random(20)
    modes = [IN_FLIGHT] * 8 + [p for p in CRASH_POINTS for _ in range(2)]
    rng.shuffle(modes)
    kills = [Kill(m, rng.random()) for m in modes]
    assert len(kills) == 20
    rounds: list[list[Kill]] = []
    while kills:
        take = rng.choice((1, 1, 2))
        rounds.append(kills[:take])
        kills = kills[take:]
    counts = run_crash_suite(
        repo, tmp_path, make_simulator, rounds, per_kill=3, latency=0.3, seed=20
    )
    assert counts["kills"] == 20
    assert set(counts["kills_by_point"]) == {IN_FLIGHT, *CRASH_POINTS}


def test_the_crash_hook_is_off_unless_set_and_refuses_unknown_points():
    assert storage.crash_at() is None  # unset: every call site is one falsy test
    assert storage._crash_at("") is None
    assert storage._crash_at("after-record") == ("after-record", 1)
    assert storage._crash_at("mid-temp-write:7") == ("mid-temp-write", 7)
    for bad in ("after-lunch:1", "after-answer:0", "after-answer:x"):
        with pytest.raises(ConfigError, match="DEEPSEEK_REVIEW_CRASH_AT"):
            storage._crash_at(bad)
