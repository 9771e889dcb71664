"""A batch that stopped early (Ctrl-C, a budget, --fail-fast) does not count the entries it
gave up as finished: the counters once said ``[7/7 finished]`` and then "4 ok ... 3 pending".
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.batch.report import STATUSES
from deepseek_review.batch.schedule import Progress
from deepseek_review.cli.progress import _counters, _status
from tests.support.batch import batch, manifest, spawn_batch, wait_for
from tests.support.progress import COUNTERS, counters

LAST_COUNTERS = re.compile(r"\[(\d+)/(\d+) finished, (?:(\d+) pending, )?")


def progress(total: int, **counts: int) -> Progress:
    every: dict[str, int] = {**dict.fromkeys(STATUSES, 0), **counts}
    return Progress(total=total, counts=every, in_flight=0, tokens=0, elapsed=3.0)


def test_entries_given_up_are_counted_pending_not_finished() -> None:
    p = progress(7, ok=4, pending=3)
    assert (p.finished, p.pending, p.waiting) == (4, 3, 0)
    assert _counters(p) == "[4/7 finished, 3 pending, 0 asking, 0 writing, 0 waiting]"
    assert _status(p).startswith("4/7  4 ok  0 skipped  0 failed  3 pending  ")
    assert _status(p).endswith("0:03  done")


def test_a_batch_without_pending_entries_says_nothing_of_them() -> None:
    p = progress(3, ok=1, failed=1)
    assert _counters(p) == "[2/3 finished, 0 asking, 0 writing, 1 waiting]"
    assert "pending" not in _status(p)


def _last_counts(err: str) -> tuple[int, int, int]:
    lines = [m for line in err.splitlines() if (m := LAST_COUNTERS.search(line))]
    assert lines, err
    last = lines[-1]
    return int(last.group(1)), int(last.group(2)), int(last.group(3) or 0)


def test_a_batch_halted_by_its_budget_counts_the_rest_pending(
    repo: Path, simulator: Any, cli: Any
) -> None:
    manifest(repo, ["a", "b", "c"])
    r = batch(cli, simulator, "--jobs", "1", "--max-total-tokens", "1")
    assert r.code == 11, r.err
    assert _last_counts(r.err) == (1, 3, 2)
    lines = [line for line in r.err.splitlines() if "finished, " in line]
    assert all(COUNTERS.match(line) for line in lines), r.err
    assert max(counters(line)[0] for line in lines) == 1  # only "a" ever finished


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_batch_counts_what_it_did_not_finish_as_pending(
    repo: Path, make_simulator: Any, signum: int
) -> None:
    sim = make_simulator(answer_words=20, latency=1.0)
    manifest(repo, [f"r{i}" for i in range(6)])
    proc = spawn_batch(repo, sim.base_url)
    wait_for(lambda: len(sim.chat_requests()) == 2)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert _last_counts(err) == (2, 6, 4)
    assert "2 ok" in err and "4 pending" in err
