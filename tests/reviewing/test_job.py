"""The review job: what it asks its request gate and tells its event sink, and the batch's
log lines that name their entry (the job passes the topic; nothing is read from the thread)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from deepseek_review.chat.client import ChatClient
from deepseek_review.chat.types import Completion, RetryPolicy
from deepseek_review.errors import Interrupted, ReviewError
from deepseek_review.reviewing.job import JobResult, job_from_plan, run_job
from deepseek_review.reviewing.plan import (
    ContinuationOptions,
    ReviewOptions,
    ReviewPlan,
    plan_review,
)
from deepseek_review.testing.simulator import Simulator
from tests.support.batch import batch, manifest
from tests.support.cli import files_under


@dataclass
class Gate:
    """Admits the first ``admit`` requests, then refuses; records what it was asked."""

    admit: int
    asked: list[bool] = field(default_factory=list)
    held: int = 0

    def acquire(self, *, first: bool) -> bool:
        self.asked.append(first)
        if len(self.asked) > self.admit:
            return False
        self.held += 1
        return True

    def release(self) -> None:
        self.held -= 1


@dataclass
class Sink:
    """Records what the job tells it, streamed pieces left out (their number varies)."""

    told: list[str] = field(default_factory=list)

    def sending(self, *, first: bool, note: str | None) -> None:
        self.told.append(f"sending first={first} note={note is not None}")

    def attempt(self) -> None:
        self.told.append("attempt")

    def streamed(self, pieces: int, elapsed: float) -> None:
        return None

    def answered(self, completion: Completion, tokens: int, estimated: bool, model: str) -> None:
        self.told.append(f"answered {tokens > 0} estimated={estimated}")

    def failed(self, error: ReviewError) -> None:
        self.told.append(f"failed {type(error).__name__}")

    def returned(self) -> None:
        self.told.append("returned")


def _plan(
    repo: Path, sim: Simulator, *, max_tokens: int = 4096, continuations: int = 0
) -> ReviewPlan:
    return plan_review(
        ReviewOptions(
            context=("docs/spec.md",),
            prompt="Check the mean.",
            endpoint=sim.base_url,
            repo_root=str(repo),
            max_tokens=max_tokens,
            continuation=ContinuationOptions(max_continuations=continuations),
        ),
        env={},
    )


def test_a_first_request_the_gate_refuses_is_not_started_and_sends_nothing(repo, simulator):
    gate, sink = Gate(admit=0), Sink()
    plan = _plan(repo, simulator)
    with ChatClient(plan.endpoint.url) as client:
        done = run_job(job_from_plan(plan), client, gate=gate, events=sink)
    assert done.not_started and not done.started and done.segments == []
    assert gate.asked == [True] and gate.held == 0
    assert sink.told == []
    assert simulator.chat_requests() == []
    assert not (repo / "reviews").exists()


def test_a_continuation_the_gate_refuses_is_interrupted_and_the_primary_stays_written(
    repo, make_simulator
):
    sim = make_simulator(answer_words=60)
    gate = Gate(admit=1)
    done = JobResult()
    plan = _plan(repo, sim, max_tokens=25, continuations=2)
    with (
        ChatClient(plan.endpoint.url) as client,
        pytest.raises(Interrupted, match="before sending"),
    ):
        run_job(job_from_plan(plan), client, gate=gate, result=done)
    assert gate.asked == [True, False] and gate.held == 0
    (primary,) = done.segments
    assert done.new == 1 and primary.truncated
    assert (repo / primary.receipt_path).is_file()
    assert len(sim.chat_requests()) == 1


def test_the_sink_is_told_each_request_in_order_and_the_gate_released_after_each(
    repo, make_simulator
):
    sim = make_simulator(answer_words=40)
    gate, sink = Gate(admit=10), Sink()
    plan = _plan(repo, sim, max_tokens=25, continuations=1)
    with ChatClient(plan.endpoint.url) as client:
        done = run_job(job_from_plan(plan), client, gate=gate, events=sink)
    assert gate.asked == [True, False] and gate.held == 0
    one = ["attempt", "answered True estimated=False", "returned"]
    assert sink.told == [
        "sending first=True note=False",
        *one,
        "sending first=False note=True",
        *one,
    ]
    assert done.new == 2 and done.started and not done.not_started


def test_a_request_that_fails_is_told_as_failed_then_returned(repo, make_simulator):
    sim = make_simulator()
    sim.script_faults(["500"])
    sink = Sink()
    plan = _plan(repo, sim)
    client = ChatClient(plan.endpoint.url, policy=RetryPolicy(max_attempts=1))
    with client, pytest.raises(ReviewError, match="answered 500"):
        run_job(job_from_plan(plan), client, gate=Gate(admit=1), events=sink)
    assert sink.told == [
        "sending first=True note=False",
        "attempt",
        "failed ServerError",
        "returned",
    ]
    assert files_under(repo / "reviews") == []


def test_a_batch_retry_line_names_the_entry_it_belongs_to(repo, make_simulator, cli):
    sim = make_simulator()
    sim.script_faults(["500"])
    manifest(repo, ["alpha"])
    r = batch(cli, sim)
    assert r.code == 0, r.err
    assert re.search(
        r"^deepseek-review: alpha: attempt 1/\d+ failed: .*answered 500", r.err, re.M
    ), r.err
